# numpy arms for prereg's CPU device: LayerNorm, RMSNorm and softmax, forward and backward.
#
# Each entry function takes prereg's `t` (numpy arrays that view prereg's buffers, plus rows,
# cols, dtype, eps, pass_, device, options) and returns the step: a zero-argument callable
# that computes the whole pass and returns its outputs as a dict (prereg copies them into its
# buffers for the correctness check, outside the timed window). The arithmetic is numpy's
# float32 (float16 inputs are widened to float32 and the outputs narrowed back); the column
# sums of the backward (dgamma, dbeta) accumulate in float64 because numpy sums along axis 0
# of a row-major array one row after another, without pairwise summation. numpy has no
# bfloat16: a bf16 protocol is refused with an exception (an arm-error deviation).
import numpy as np

_NUMPY_DTYPES = {"fp32": np.float32, "fp16": np.float16}


def _storage_dtype(t):
    """The numpy dtype of the protocol's dtype; refuses what numpy cannot hold."""
    if t.device != "cpu":
        raise RuntimeError(f"numpy arms run on the cpu device, not {t.device}")
    if t.dtype not in _NUMPY_DTYPES:
        raise RuntimeError(f"numpy has no {t.dtype} type; numpy arms take fp32 or fp16")
    return _NUMPY_DTYPES[t.dtype]


def _f32(a):
    """a as float32 (no copy when it already is)."""
    return np.asarray(a).astype(np.float32, copy=False)


def _column_sum(a, dtype):
    """The sum over rows of a [rows, cols] array, accumulated in float64."""
    return np.sum(a, axis=0, dtype=np.float64).astype(dtype)


# --- LayerNorm --------------------------------------------------------------------------------


def layernorm_forward(x, gamma, beta, eps):
    """y, mean, rstd of a row-wise LayerNorm (biased variance), in float32."""
    xf = _f32(x)
    mean = xf.mean(axis=1)
    xc = xf - mean[:, None]
    var = np.mean(xc * xc, axis=1)
    rstd = (1.0 / np.sqrt(var + np.float32(eps))).astype(np.float32)
    y = xc * rstd[:, None] * _f32(gamma) + _f32(beta)
    return y, mean, rstd


def layernorm_backward(x, gamma, mean, rstd, dy):
    """dx, dgamma, dbeta of LayerNorm from the saved mean and rstd, in float32."""
    xhat = (_f32(x) - mean[:, None]) * rstd[:, None]
    dyf = _f32(dy)
    wdy = dyf * _f32(gamma)
    c1 = np.mean(xhat * wdy, axis=1)
    c2 = np.mean(wdy, axis=1)
    dx = (wdy - (xhat * c1[:, None] + c2[:, None])) * rstd[:, None]
    return dx, _column_sum(dyf * xhat, np.float32), _column_sum(dyf, np.float32)


def layernorm(t):
    """prereg entry: numpy LayerNorm; fwd returns y, mean, rstd; fwd+bwd also dx, dgamma, dbeta."""
    out = _storage_dtype(t)
    x, gamma, beta, eps = t.x, t.gamma, t.beta, t.eps
    backward = t.pass_ == "fwd+bwd"
    dy = t.dy if backward else None

    def step():
        y, mean, rstd = layernorm_forward(x, gamma, beta, eps)
        result = {"y": y.astype(out), "mean": mean, "rstd": rstd}
        if backward:
            dx, dgamma, dbeta = layernorm_backward(x, gamma, mean, rstd, dy)
            result.update(dx=dx.astype(out), dgamma=dgamma.astype(out), dbeta=dbeta.astype(out))
        return result

    return step


# --- RMSNorm ----------------------------------------------------------------------------------


def rmsnorm_forward(x, gamma, eps):
    """y, rstd of a row-wise RMSNorm, in float32."""
    xf = _f32(x)
    rstd = (1.0 / np.sqrt(np.mean(xf * xf, axis=1) + np.float32(eps))).astype(np.float32)
    y = xf * rstd[:, None] * _f32(gamma)
    return y, rstd


def rmsnorm_backward(x, gamma, rstd, dy):
    """dx, dgamma of RMSNorm from the saved rstd, in float32."""
    xf, dyf = _f32(x), _f32(dy)
    wdy = dyf * _f32(gamma)
    c = np.mean(wdy * xf, axis=1) * rstd * rstd
    dx = rstd[:, None] * (wdy - xf * c[:, None])
    return dx, _column_sum(dyf * xf * rstd[:, None], np.float32)


def rmsnorm(t):
    """prereg entry: numpy RMSNorm; fwd returns y, rstd; fwd+bwd also dx, dgamma."""
    out = _storage_dtype(t)
    x, gamma, eps = t.x, t.gamma, t.eps
    backward = t.pass_ == "fwd+bwd"
    dy = t.dy if backward else None

    def step():
        y, rstd = rmsnorm_forward(x, gamma, eps)
        result = {"y": y.astype(out), "rstd": rstd}
        if backward:
            dx, dgamma = rmsnorm_backward(x, gamma, rstd, dy)
            result.update(dx=dx.astype(out), dgamma=dgamma.astype(out))
        return result

    return step


# --- softmax ----------------------------------------------------------------------------------


def softmax_forward(x):
    """Row-wise softmax with the row maximum subtracted, in float32."""
    xf = _f32(x)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_backward(y, dy):
    """dx = y * (dy - <dy, y>) per row, in float32."""
    yf, dyf = _f32(y), _f32(dy)
    return yf * (dyf - np.sum(dyf * yf, axis=1, keepdims=True))


def softmax(t):
    """prereg entry: numpy softmax; fwd returns y; fwd+bwd also dx (from the y it computed)."""
    out = _storage_dtype(t)
    x = t.x
    backward = t.pass_ == "fwd+bwd"
    dy = t.dy if backward else None

    def step():
        y = softmax_forward(x)
        result = {"y": y.astype(out)}
        if backward:
            result["dx"] = softmax_backward(y, dy).astype(out)
        return result

    return step
