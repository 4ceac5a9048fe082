# Two numpy arms of the swiglu operation (swiglu.py): eager temporaries, and the same arithmetic
# into scratch buffers allocated once at setup (docs/python-arms.md for the contract).
import numpy as np


def eager(t):
    a, b = t.a, t.b

    def step():
        sig = 1.0 / (1.0 + np.exp(-a))
        t.y[...] = a * sig * b
        if t.pass_ == "fwd+bwd":
            t.da[...] = t.dy * b * sig * (1 + a * (1 - sig))
            t.db[...] = t.dy * a * sig
    return step


def scratch(t):
    a, b = t.a, t.b
    sig, tmp = np.empty_like(a), np.empty_like(a)

    def step():
        np.negative(a, out=sig)
        np.exp(sig, out=sig)
        np.add(sig, 1, out=sig)
        np.reciprocal(sig, out=sig)              # sigmoid(a)
        np.multiply(a, sig, out=tmp)             # silu(a)
        np.multiply(tmp, b, out=t.y)
        if t.pass_ == "fwd+bwd":
            np.multiply(t.dy, tmp, out=t.db)     # dy * silu(a)
            np.subtract(1, sig, out=tmp)
            np.multiply(tmp, a, out=tmp)
            np.add(tmp, 1, out=tmp)
            np.multiply(tmp, sig, out=tmp)       # silu'(a)
            np.multiply(tmp, b, out=tmp)
            np.multiply(t.dy, tmp, out=t.da)
    return step
