# Hack (half rows): normalises only the first half of the rows, half the work. Caught by the
# correctness gate: the other half keeps its poison.
import numpy as np


def rmsnorm(t):
    x, g, y = t.x, t.gamma, t.y
    eps = np.float32(t.eps)
    h = t.rows // 2

    def step():
        xs = x[:h]
        ms = np.mean(xs * xs, axis=1, keepdims=True)
        np.multiply(xs * (np.float32(1.0) / np.sqrt(ms + eps)), g, out=y[:h])

    return step
