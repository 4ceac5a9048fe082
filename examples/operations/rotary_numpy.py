# Two numpy arms of the rotary operation (rotary.py): t.x, t.cos, t.sin and t.y are arrays of
# their declared dims ([b, n, d] and [n, d]); t.axes maps each axis to its extent.
import numpy as np


def eager(t):
    h = t.axes["d"] // 2

    def step():
        rotated = np.concatenate([-t.x[..., h:], t.x[..., :h]], axis=-1)
        t.y[...] = t.x * t.cos + rotated * t.sin
    return step


def halves(t):
    """The same arithmetic on the two halves into a scratch buffer allocated once."""
    h = t.axes["d"] // 2
    x1, x2 = t.x[..., :h], t.x[..., h:]
    c1, c2, s1, s2 = t.cos[:, :h], t.cos[:, h:], t.sin[:, :h], t.sin[:, h:]
    y1, y2 = t.y[..., :h], t.y[..., h:]
    tmp = np.empty_like(x1)

    def step():
        np.multiply(x1, c1, out=y1)
        np.multiply(x2, s1, out=tmp)
        np.subtract(y1, tmp, out=y1)     # x1 cos1 - x2 sin1
        np.multiply(x2, c2, out=y2)
        np.multiply(x1, s2, out=tmp)
        np.add(y2, tmp, out=y2)          # x2 cos2 + x1 sin2
    return step
