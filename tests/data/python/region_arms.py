"""numpy LayerNorm arms with named regions (t.region), for tests/e2e/regions.sh on the CPU."""
import numpy as np


def layernorm_regions(t):
    """The forward in two regions, "stats" (mean, rstd) and "normalise" (y); the return dict is
    outside both, so the regions' sum is below the step's time."""
    x, g, b, eps = t.x, t.gamma, t.beta, t.eps

    def step():
        with t.region("stats"):
            mu = x.mean(axis=1, keepdims=True)
            rs = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + eps)
        with t.region("normalise"):
            y = (x - mu) * rs * g + b
        return {"y": y}

    return step


def layernorm_repeated(t):
    """The same label opened twice per step: its time is the sum of both."""
    x, g, b, eps = t.x, t.gamma, t.beta, t.eps

    def step():
        with t.region("half"):
            mu = x.mean(axis=1, keepdims=True)
        with t.region("half"):
            rs = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + eps)
        return {"y": (x - mu) * rs * g + b}

    return step


def layernorm_bad_label(t):
    """A label outside the allowed characters: the step raises (an arm-error)."""
    x = t.x

    def step():
        with t.region("has space"):
            return {"y": x * 0}

    return step
