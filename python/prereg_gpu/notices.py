"""prereg's notices as Python warnings (docs/python.md, "Notices"): every `prereg: notice:` and
`prereg: warning:` line the binary writes on stderr is raised through `warnings.warn` with the
category `PreregNotice`, so a script, a notebook or pytest shows it (or filters it) as any other
warning."""
import warnings

_PREFIXES = ("prereg: notice: ", "prereg: warning: ")


class PreregNotice(UserWarning):
    """One notice or warning line of the prereg binary, as it printed it."""


def warn_notices(stderr, stacklevel=4):
    """Warns once per notice or warning line of `stderr` (progress redraws stripped)."""
    for raw in stderr.splitlines():
        line = raw.strip("\r").rsplit("\x1b[K", 1)[-1].rsplit("\r", 1)[-1]
        for prefix in _PREFIXES:
            at = line.find(prefix)
            if at >= 0:
                warnings.warn(line[at:], PreregNotice, stacklevel=stacklevel)
                break
