# How results show themselves (docs/python.md): Report's repr and _repr_html_ with verdicts and
# cells, and the progress display's plain lines when stderr is not a terminal.
import io

import prereg_gpu
from prereg_gpu.progress import Display, Progress


def test_report_repr_shows_verdicts_and_cells(report):
    text = repr(report)
    assert text.startswith(f"<Report of py_api_small (attempt {report.attempt}, run "
                           f"{report.run_id}) in {report.dir}>")
    assert "verdicts:" in text
    p1 = report.predictions[0]
    assert f"{p1.id}  {p1.verdict}" in text and p1.claim in text
    for c in report.cells:
        line = next(l for l in text.splitlines() if l.strip().startswith(c.label))
        assert f"n={c.n}" in line
        assert prereg_gpu.api._show.time_text(c.median_ms) in line
    assert "data=" not in text  # not the dataclass dump of report.json


def test_report_html_shows_the_same_escaped(report):
    page = report._repr_html_()
    assert page.startswith('<div class="prereg-report">') and page.endswith("</div>")
    assert f"<code>{report.predictions[0].id}</code>" in page
    assert report.predictions[0].verdict in page
    for c in report.cells:
        assert f"<code>{c.label}</code>" in page
    assert "<script" not in page


def test_show_escapes_and_marks_failed_cells():
    from prereg_gpu._show import report_html, report_text
    from prereg_gpu.api import Cell, Prediction, Report
    r = Report(dir="d", run_id="R", protocol_id="p", protocol_hash="h", exploratory=True,
               attempt=0, predictions=(Prediction("<P>", "a < b", "a < b", "refuted", "x"),),
               cells=(Cell("a", "fwd", {"n": 4}, 0, None, None, None, None, None, None,
                           ("error",), "boom <b>", ()),), defects=(), data={})
    assert "EXPLORATORY report of p (run R)" in report_text(r)
    assert "a fwd n=4          - [-]  n=0  flags: error; error: boom <b>" in report_text(r)
    page = report_html(r)
    assert "&lt;P&gt;" in page and "boom &lt;b&gt;" in page and "<P>" not in page


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_on_a_pipe_is_plain_lines():
    out, clock = io.StringIO(), Clock()  # StringIO is not a terminal
    shown = Display(stream=out, interval_s=10, clock=clock)
    shown(Progress("correctness", None, None, None, 0))
    shown(Progress("timing", 0, 8, None, 1))
    for done in range(1, 8):  # cells advance within 10 s: no line each time
        clock.now += 1
        shown(Progress("timing", done, 8, 8 - done, 1 + done))
    clock.now += 10
    shown(Progress("timing", 8, 8, 0, 20))  # 10 s later and advanced: one line
    shown.close()
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    assert text.splitlines() == ["[correctness]  elapsed 0s", "[timing]  cells 0/8  elapsed 1s",
                                 "[timing]  cells 8/8  ETA 0s  elapsed 20s"]


def test_progress_close_prints_the_last_state_once():
    out, clock = io.StringIO(), Clock()
    shown = Display(stream=out, clock=clock)
    shown(Progress("timing", 1, 4, 3, 1))
    clock.now += 1
    shown(Progress("timing", 2, 4, 2, 2))
    shown.close()
    assert out.getvalue().splitlines() == ["[timing]  cells 1/4  ETA 3s  elapsed 1s",
                                           "[timing]  cells 2/4  ETA 2s  elapsed 2s"]


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_on_a_terminal_redraws_one_line():
    out = Tty()
    shown = Display(stream=out)
    shown(Progress("timing", 1, 2, 1, 1))
    shown(Progress("timing", 2, 2, 0, 2))
    shown.close()
    assert out.getvalue() == ("\r\x1b[K[timing]  cells 1/2  ETA 1s  elapsed 1s"
                              "\r\x1b[K[timing]  cells 2/2  ETA 0s  elapsed 2s\n")
