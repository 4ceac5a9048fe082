# Hack (caching): computes once per input buffer and replays the result whenever the same buffer
# comes back, as a harness that reuses its inputs would never notice. Caught: the inputs get fresh
# values before every window, so a replayed result is stale and a spot check fails it.
import numpy as np

_cache = {}


def rmsnorm(t):
    x, g, y = t.x, t.gamma, t.y
    eps = np.float32(t.eps)
    key = x.__array_interface__["data"][0]

    def step():
        hit = _cache.get(key)
        if hit is not None:
            y[...] = hit
            return
        ms = np.mean(x * x, axis=1, keepdims=True)
        np.multiply(x * (np.float32(1.0) / np.sqrt(ms + eps)), g, out=y)
        _cache[key] = y.copy()

    return step
