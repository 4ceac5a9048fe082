# Honest: Liger-Kernel's RMSNorm forward (liger_kernel.ops.rms_norm), Llama's casting mode. Where
# Liger-Kernel is not installed the setup raises, and the leaderboard excludes it with that reason.
import torch

try:
    from liger_kernel.ops.rms_norm import rms_norm_forward
except ImportError as error:  # the leaderboard quotes it
    rms_norm_forward = None
    _why = f"{type(error).__name__}: {error}"


def rmsnorm(t):
    if rms_norm_forward is None:
        raise RuntimeError("Liger-Kernel is not importable here: " + _why)
    x, w, y, eps = t.x, t.gamma, t.y, float(t.eps)

    import inspect

    extra = (False,) if len(inspect.signature(rms_norm_forward).parameters) > 5 else ()

    def step():
        out = rms_norm_forward(x, w, eps, 0.0, "llama", *extra)[0]
        y.copy_(out.view_as(y))

    return step
