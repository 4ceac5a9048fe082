# Honest: torch.compile (Inductor) of the composite, one compiled variant per shape; the first
# call compiles (prereg keeps it out of the samples: it is the correctness gate's call).
import torch

torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)


@torch.compile(dynamic=False)
def _rms(x, w, eps: float):
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rmsnorm(t):
    x, w, y, eps = t.x, t.gamma, t.y, float(t.eps)

    def step():
        y.copy_(_rms(x, w, eps))

    return step
