"""How a Report shows itself: `repr()` (the REPL, logs) and `_repr_html_` (Jupyter): the protocol
and run, each prediction's verdict with its claim and reason, and each cell's median, IQR,
sample count, flags and error."""
import html
import math

MAX_CELLS = 40  # more are summarised in one line


def time_text(ms):
    """A time in ms with three significant digits and a unit (ns, us, ms, s); '-' if unknown."""
    if ms is None or not math.isfinite(ms):
        return "-"
    for limit, scale, unit in ((1000, 1e-3, "s"), (1, 1, "ms"), (1e-3, 1e3, "us")):
        if ms >= limit:
            return f"{ms * scale:.3g} {unit}"
    return f"{ms * 1e6:.3g} ns"


def _title(r):
    kind = "EXPLORATORY report" if r.exploratory else "Report"
    attempt = f"attempt {r.attempt}, " if r.attempt else ""
    return f"{kind} of {r.protocol_id} ({attempt}run {r.run_id})"


def _iqr_text(c):
    if c.q1_ms is None or c.q3_ms is None:
        return "-"
    return f"{time_text(c.q1_ms)} - {time_text(c.q3_ms)}"


def _cell_note(c):
    notes = []
    if c.flags:
        notes.append("flags: " + ", ".join(c.flags))
    if c.error:
        notes.append("error: " + c.error)
    return "; ".join(notes)


def report_text(r):
    """The plain-text summary repr() shows."""
    lines = [f"<{_title(r)} in {r.dir}>"]
    if r.predictions:
        lines.append("verdicts:")
        width = max(len(p.id) for p in r.predictions)
        for p in r.predictions:
            claim = f" - {p.claim}" if p.claim else ""
            lines.append(f"  {p.id:<{width}}  {p.verdict:<12}{claim}")
            if p.reason:
                lines.append(f"  {'':<{width}}  {'':<12}({p.reason})")
    if r.cells:
        lines.append("cells: median [q1 - q3], n")
        width = max(len(c.label) for c in r.cells[:MAX_CELLS])
        for c in r.cells[:MAX_CELLS]:
            note = _cell_note(c)
            lines.append(f"  {c.label:<{width}}  {time_text(c.median_ms):>9} "
                         f"[{_iqr_text(c)}]  n={c.n}" + (f"  {note}" if note else ""))
        if len(r.cells) > MAX_CELLS:
            lines.append(f"  ... {len(r.cells) - MAX_CELLS} more cells")
    if r.defects:
        codes = sorted({d.code for d in r.defects})
        lines.append(f"defects: {len(r.defects)} ({', '.join(codes)})")
    return "\n".join(lines)


_COLOURS = {"confirmed": "#2a7d2a", "refuted": "#b22"}


def report_html(r):
    """The HTML summary Jupyter shows (escaped; no script, no style sheet)."""
    e = html.escape
    out = [f"<div class=\"prereg-report\"><p><strong>{e(_title(r))}</strong><br>"
           f"<code>{e(str(r.dir))}</code></p>"]
    if r.predictions:
        out.append("<table><thead><tr><th>prediction</th><th>verdict</th><th>claim</th>"
                   "<th>reason</th></tr></thead><tbody>")
        for p in r.predictions:
            colour = _COLOURS.get(p.verdict, "#777")
            out.append(f"<tr><td><code>{e(p.id)}</code></td><td><span style=\"color:#fff;"
                       f"background:{colour};padding:0 4px;border-radius:3px\">{e(p.verdict)}"
                       f"</span></td><td>{e(p.claim)}</td><td>{e(p.reason)}</td></tr>")
        out.append("</tbody></table>")
    if r.cells:
        out.append("<table><thead><tr><th>cell</th><th>median</th><th>q1 - q3</th><th>n</th>"
                   "<th>flags, error</th></tr></thead><tbody>")
        for c in r.cells[:MAX_CELLS]:
            out.append(f"<tr><td><code>{e(c.label)}</code></td><td>{e(time_text(c.median_ms))}"
                       f"</td><td>{e(_iqr_text(c))}</td>"
                       f"<td>{c.n}</td><td>{e(_cell_note(c))}</td></tr>")
        out.append("</tbody></table>")
        if len(r.cells) > MAX_CELLS:
            out.append(f"<p>... {len(r.cells) - MAX_CELLS} more cells</p>")
    if r.defects:
        out.append(f"<p>defects: {len(r.defects)} "
                   f"({e(', '.join(sorted({d.code for d in r.defects})))})</p>")
    out.append("</div>")
    return "".join(out)
