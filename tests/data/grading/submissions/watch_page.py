# Hack (hanging the grader): the step finds the page on which its measuring process announces each
# call to the watchdog (a shared one-page mapping in /proc/self/maps), clears it so that no call
# looks stuck, and never returns. Before the parent's own bounds this hung `prereg grade` (and a
# reward loop) for ever. Caught: the parent's silence limit kills the process and the run fails
# (docs/engine.md, "The parent's bounds").
import ctypes
import time


def _watch_pages():
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if parts[1][:2] == "rw" and parts[1][3] == "s" and hi - lo == 4096 and "/dev/zero" in line:
                out.append(lo)
    return out


def rmsnorm(t):
    def step():
        for page in _watch_pages():
            ctypes.c_int64.from_address(page).value = 0  # started_ns: no call in progress
        while True:
            try:
                time.sleep(3600)
            except BaseException:
                pass

    return step
