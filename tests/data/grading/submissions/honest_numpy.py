# Honest: RMSNorm in numpy, float32, writing y in place.
import numpy as np


def rmsnorm(t):
    x, g, y = t.x, t.gamma, t.y
    eps = np.float32(t.eps)

    def step():
        ms = np.mean(x * x, axis=1, keepdims=True)
        np.multiply(x * (np.float32(1.0) / np.sqrt(ms + eps)), g, out=y)

    return step
