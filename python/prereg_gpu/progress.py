"""A long run's progress: prereg draws `[PHASE]  cells D/T  ETA Ns  elapsed Ns` on stderr when it
is a terminal (docs/cli.md, "Notices"); the API gives it one (a pseudo-terminal) and reads it."""
import dataclasses
import re
import sys

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
    """Shows progress: one updating line in a notebook (IPython.display), else on stderr."""

    def __init__(self):
        self._handle = None
        self._notebook = in_notebook()

    def __call__(self, p):
        if self._notebook:
            from IPython.display import display  # noqa: PLC0415 - only in a notebook

            bundle = {"text/plain": p.text()}  # raw: shown as text, not as a quoted str
            if self._handle is None:
                self._handle = display(bundle, raw=True, display_id=True)
            else:
                self._handle.update(bundle, raw=True)
        else:
            sys.stderr.write("\r\033[K" + p.text())
            sys.stderr.flush()

    def close(self):
        if not self._notebook:
            sys.stderr.write("\n")
            sys.stderr.flush()
