"""A long run's progress: prereg draws `[PHASE]  cells D/T  ETA Ns  elapsed Ns` on stderr when it
is a terminal (docs/cli.md, "Notices"); the API gives it one (a pseudo-terminal) and reads it."""
import dataclasses
import re
import sys
import time

_LINE = re.compile(
    r"\[(?P<phase>[^\[\]\r\n\x1b]+)\](?:\s+cells (?P<done>\d+)/(?P<total>\d+))?"
    r"(?:\s+ETA (?P<eta>\d+)s)?\s+elapsed (?P<elapsed>\d+)s")


@dataclasses.dataclass(frozen=True)
class Progress:
    """One redraw of prereg's progress line."""

    phase: str
    done: int | None
    total: int | None
    eta_s: int | None
    elapsed_s: int

    def text(self):
        cells = f"  cells {self.done}/{self.total}" if self.total is not None else ""
        eta = f"  ETA {self.eta_s}s" if self.eta_s is not None else ""
        return f"[{self.phase}]{cells}{eta}  elapsed {self.elapsed_s}s"


def parse_progress(text):
    """Every complete progress redraw in `text`, in order."""
    out = []
    for m in _LINE.finditer(text):
        num = lambda k: int(m.group(k)) if m.group(k) is not None else None  # noqa: E731
        out.append(Progress(m.group("phase"), num("done"), num("total"), num("eta"),
                            int(m.group("elapsed"))))
    return out


def in_notebook():
    """True inside a Jupyter kernel (an IPython shell with a kernel)."""
    ip = sys.modules.get("IPython")
    if ip is None:
        return False
    try:
        shell = ip.get_ipython()
    except Exception:  # noqa: BLE001 - no shell at all
        return False
    return shell is not None and hasattr(shell, "kernel")


class Display:
    """Shows progress: one updating line in a notebook (IPython.display); on a terminal one line
    on stderr redrawn in place; on stderr that is not a terminal (a log, a CI job, a pipe) plain
    lines without terminal control codes: one when the phase changes, else at most one every
    `interval_s` seconds while cells advance, and the last state at close."""

    def __init__(self, stream=None, interval_s=10.0, clock=time.monotonic):
        self._handle = None
        self._notebook = in_notebook()
        self._stream = stream
        self._interval_s = interval_s
        self._clock = clock
        self._last = None  # the last Progress seen
        self._printed = None  # (Progress, time) of the last plain line
        self._drawn = False

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stderr

    def _is_terminal(self):
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except ValueError:  # a closed stream
            return False

    def __call__(self, p):
        self._last = p
        if self._notebook:
            from IPython.display import display  # noqa: PLC0415 - only in a notebook

            bundle = {"text/plain": p.text()}  # raw: shown as text, not as a quoted str
            if self._handle is None:
                self._handle = display(bundle, raw=True, display_id=True)
            else:
                self._handle.update(bundle, raw=True)
        elif self._is_terminal():
            self.stream.write("\r\033[K" + p.text())
            self.stream.flush()
            self._drawn = True
        else:
            self._plain(p)

    def _plain(self, p):
        now = self._clock()
        if self._printed is not None:
            before, at = self._printed
            if p.phase == before.phase and (p.done == before.done or
                                            now - at < self._interval_s):
                return
        self.stream.write(p.text() + "\n")
        self.stream.flush()
        self._printed = (p, now)

    def close(self):
        if self._notebook:
            return
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
        elif self._last is not None and (self._printed is None or self._printed[0] != self._last):
            self.stream.write(self._last.text() + "\n")
            self.stream.flush()
