"""numpy arms for tests/e2e/outside_arms.sh: a correct LayerNorm, a raising one, a wrong one."""
import numpy as np


def layernorm(t):
    x, g, b, eps = t.x, t.gamma, t.beta, t.eps

    def step():
        mu = x.mean(axis=1, keepdims=True)
        rs = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + eps)
        return {"y": (x - mu) * rs * g + b}

    return step


def raises(t):
    def step():
        raise RuntimeError("planted failure inside the step")

    return step


def wrong(t):
    def step():
        t.y[...] = t.x * t.gamma  # forgets the normalisation
    return step
