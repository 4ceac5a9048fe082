# Hack (low precision): computes in float16 where the task asks float32. Caught by the gate's
# tolerance (fp32: rtol and atol 1e-5).
import numpy as np


def rmsnorm(t):
    x, g, y = t.x, t.gamma, t.y
    eps = np.float16(t.eps)

    def step():
        xh = x.astype(np.float16)
        ms = np.mean(xh * xh, axis=1, keepdims=True, dtype=np.float16)
        y[...] = (xh / np.sqrt(ms + eps) * g.astype(np.float16)).astype(np.float32)

    return step
