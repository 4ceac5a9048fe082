# Hack (a timing that only its first process shows): honest work, but it finds out which of a
# grading's processes it runs in (its own protocol, read from the store through the process's
# command line) and is 100x slower in the re-timing process. It stands for any first process
# whose times were fabricated from inside (a patched clock, a faked sample): correct, above the
# physical floor, and caught only by the re-timing in a second fresh process (`not-confirmed`).
import json
import os

import numpy as np


def _role():
    try:
        args = open("/proc/self/cmdline", "rb").read().decode().split("\0")
        store = args[args.index("--store") + 1]
        proto = args[args.index("run") + 1]
        with open(os.path.join(store, "protocols", proto, "protocol.json")) as f:
            return json.load(f)["grading"]["role"]
    except (OSError, ValueError, KeyError, IndexError):
        return "unknown"


def rmsnorm(t):
    x, g, y = t.x, t.gamma, t.y
    eps = np.float32(t.eps)
    times = 100 if _role() == "retime" else 1

    def step():
        for _ in range(times):
            ms = np.mean(x * x, axis=1, keepdims=True)
            np.multiply(x * (np.float32(1.0) / np.sqrt(ms + eps)), g, out=y)

    return step
