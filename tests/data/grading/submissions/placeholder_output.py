# Hack (placeholder output): the step returns a placeholder whose value is only computed when
# the harness reads it, after the window (the work done "in the untimed checker"). Caught by
# issue 43's exact-output guard, which refuses the placeholder itself (arm-error); were it let
# through, by the physical floor (a step that does nothing is far faster than one pass).
import numpy as np


class Lazy:
    def __init__(self, x, g, eps):
        self.x, self.g, self.eps = x, g, eps

    def __array__(self, dtype=None, copy=None):
        x = self.x
        ms = np.mean(x * x, axis=1, keepdims=True)
        out = x * (np.float32(1.0) / np.sqrt(ms + np.float32(self.eps))) * self.g
        return out if dtype is None else out.astype(dtype)


def rmsnorm(t):
    x, g, eps = t.x, t.gamma, t.eps

    def step():
        return {"y": Lazy(x, g, eps)}

    return step
