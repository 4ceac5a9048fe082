"""Runs the binary: captures stdout, turns a failure into PreregError, and feeds progress from a
pseudo-terminal to a callback when asked."""
import os
import pty
import select
import subprocess
import sys

from ._binary import binary_path
from .errors import PreregError
from .notices import warn_notices
from .progress import parse_progress

_ERROR = "prereg: error: "


def _error_line(stderr):
    """The last `prereg: error:` line of `stderr`, or its last non-empty line."""
    lines = [line.strip("\r").rsplit("\x1b[K", 1)[-1] for line in stderr.splitlines()]
    for line in reversed(lines):
        i = line.find(_ERROR)
        if i >= 0:
            return line[i:]
    rest = [line for line in lines if line.strip()]
    return rest[-1] if rest else "prereg: error: exited without a message"


def _run_with_pty(cmd, on_progress, env):
    """Runs `cmd` with stderr on a pseudo-terminal; returns (code, stdout, stderr text)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=slave, env=env)
    finally:
        os.close(slave)
    out, err, seen = [], [], 0
    fds = [proc.stdout.fileno(), master]
    while fds:
        ready, _, _ = select.select(fds, [], [])
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the terminal's other side closed
                chunk = b""
            if not chunk:
                fds.remove(fd)
                continue
            (out if fd != master else err).append(chunk)
            if fd == master and on_progress is not None:
                found = parse_progress(b"".join(err).decode("utf-8", "replace"))
                for p in found[seen:]:
                    on_progress(p)
                seen = len(found)
    os.close(master)
    proc.stdout.close()
    code = proc.wait()
    return code, b"".join(out).decode("utf-8", "replace"), b"".join(err).decode("utf-8", "replace")


def invoke(args, on_progress=None, ok_codes=(0,), env=None):
    """Runs `prereg ARGS...`; returns (exit code, stdout). Raises PreregError for a code outside
    `ok_codes`, with prereg's own error line."""
    cmd = [binary_path(), *map(str, args)]
    full_env = dict(os.environ, **(env or {}))
    # A Python arm runs with the interpreter calling the API (a venv's, a notebook kernel's),
    # unless PREREG_PYTHON names another (docs/python-arms.md).
    full_env.setdefault("PREREG_PYTHON", sys.executable)
    if on_progress is None:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, env=full_env,
                              check=False)
        code = done.returncode
        stdout = done.stdout.decode("utf-8", "replace")
        stderr = done.stderr.decode("utf-8", "replace")
    else:
        code, stdout, stderr = _run_with_pty(cmd, on_progress, full_env)
    warn_notices(stderr)
    if code not in ok_codes:
        raise PreregError(_error_line(stderr), code, cmd)
    return code, stdout
