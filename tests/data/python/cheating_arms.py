# Planted numpy LayerNorm arms for the guard tests: one correct arm and one arm per way of
# fooling a harness that prereg guards against (issue 12, item 7). Each takes prereg's `t`
# (numpy arrays on the cpu device) and returns its step, as kernels/python/numpy_norms.py does.
import threading
import time

import numpy as np

_cache = {}  # layernorm_cached: outputs keyed by the input buffer's address and the pass
_threads = []  # layernorm_thread: the threads it started (the tests join them)


def _honest(t):
    """The correct outputs of t's pass as a dict (float32 LayerNorm, float64 column sums)."""
    x = t.x.astype(np.float32)
    mean = x.mean(axis=1)
    xc = x - mean[:, None]
    rstd = (1.0 / np.sqrt(np.mean(xc * xc, axis=1) + np.float32(t.eps))).astype(np.float32)
    xhat = xc * rstd[:, None]
    out = {"y": xhat * t.gamma + t.beta, "mean": mean, "rstd": rstd}
    if t.pass_ == "fwd+bwd":
        wdy = t.dy * t.gamma
        c1 = np.mean(xhat * wdy, axis=1)[:, None]
        c2 = np.mean(wdy, axis=1)[:, None]
        out["dx"] = (wdy - (xhat * c1 + c2)) * rstd[:, None]
        out["dgamma"] = np.sum(t.dy * xhat, axis=0, dtype=np.float64).astype(np.float32)
        out["dbeta"] = np.sum(t.dy, axis=0, dtype=np.float64).astype(np.float32)
    return out


def layernorm_correct(t):
    """Correct: computes every output from the current inputs on every call."""
    return lambda: _honest(t)


def layernorm_cached(t):
    """Caches: computes once per input address (t.x.ctypes.data), then returns that result."""

    def step():
        key = (t.x.ctypes.data, t.pass_)
        if key not in _cache:
            _cache[key] = _honest(t)
        return _cache[key]

    return step


def layernorm_mutating(t):
    """Mutates its input: correct outputs, then halves x in place (x *= 0.5) after computing."""

    def step():
        out = _honest(t)
        t.x *= np.float32(0.5)
        return out

    return step


def layernorm_zeros(t):
    """Returns zeros: every output all zeros, of the right shape and dtype."""
    shapes = {name: a.shape for name, a in _honest(t).items()}
    return lambda: {name: np.zeros(s, np.float32) for name, s in shapes.items()}


def layernorm_raises(t):
    """Raises: the step raises RuntimeError("planted failure ...") on every call."""

    def step():
        raise RuntimeError("planted failure: layernorm_raises always raises")

    return step


def layernorm_no_beta(t):
    """Wrong: forgets beta (y = xhat * gamma); every other output is correct."""

    def step():
        out = _honest(t)
        out["y"] = out["y"] - t.beta
        return out

    return step


def layernorm_lazy(t):
    """Lazy: writes nothing and returns None, so the outputs keep whatever was in the buffers."""
    return lambda: None


def layernorm_thread(t):
    """Off-window work: returns at once; a thread waits 50 ms, then writes the outputs into t."""

    def late():
        time.sleep(0.05)
        for name, value in _honest(t).items():
            getattr(t, name)[...] = value

    def step():
        worker = threading.Thread(target=late)
        worker.start()
        _threads.append(worker)

    return step
