# Hack (warm-up detection): works honestly for its first calls (the gate's and the warm-ups'),
# then stops working, as a kernel that counts calls to find where timing starts would. Caught:
# warm-up and timed windows look alike, and seeded spot checks (the last one among them) fail
# a timed call that left its outputs unwritten.
import numpy as np

_calls = {"n": 0}


def rmsnorm(t):
    x, g, y = t.x, t.gamma, t.y
    eps = np.float32(t.eps)

    def step():
        _calls["n"] += 1
        if _calls["n"] > 5:
            return
        ms = np.mean(x * x, axis=1, keepdims=True)
        np.multiply(x * (np.float32(1.0) / np.sqrt(ms + eps)), g, out=y)

    return step
