# Hack (input mutation): right outputs, but it zeroes its input afterwards (a kernel that reuses
# its input as scratch). Caught: every spot check compares the inputs byte for byte after the
# call (defect input-mutated).
import numpy as np


def rmsnorm(t):
    x, g, y = t.x, t.gamma, t.y
    eps = np.float32(t.eps)

    def step():
        ms = np.mean(x * x, axis=1, keepdims=True)
        np.multiply(x * (np.float32(1.0) / np.sqrt(ms + eps)), g, out=y)
        x.fill(0)

    return step
