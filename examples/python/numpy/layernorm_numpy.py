# An out-of-tree numpy LayerNorm arm for prereg's cpu device (examples/python/README.md).
import numpy as np


def layernorm(t):
    """Called once per cell, outside any timed window; returns the step prereg times."""
    if t.dtype != "fp32":
        raise RuntimeError(f"this example computes fp32 only, not {t.dtype}")
    x, gamma, beta, eps = t.x, t.gamma, t.beta, np.float32(t.eps)
    backward = t.pass_ == "fwd+bwd"
    dy = t.dy if backward else None

    def step():
        # Forward: per-row mean and biased variance, then normalise, scale and shift.
        mean = x.mean(axis=1)
        xc = x - mean[:, None]
        rstd = (1 / np.sqrt(np.mean(xc * xc, axis=1) + eps)).astype(np.float32)
        xhat = xc * rstd[:, None]
        out = {"y": xhat * gamma + beta, "mean": mean, "rstd": rstd}
        if backward:
            # Backward: dx from the saved statistics; dgamma, dbeta summed over rows (in
            # float64: numpy adds the rows of axis 0 one after another).
            wdy = dy * gamma
            c1 = np.mean(xhat * wdy, axis=1)[:, None]
            c2 = np.mean(wdy, axis=1)[:, None]
            out["dx"] = (wdy - (xhat * c1 + c2)) * rstd[:, None]
            out["dgamma"] = np.sum(dy * xhat, axis=0, dtype=np.float64).astype(np.float32)
            out["dbeta"] = np.sum(dy, axis=0, dtype=np.float64).astype(np.float32)
        return out  # prereg copies these into its buffers, outside the timed window

    return step
