# Honest: PyTorch eager, the Hugging Face composite (fp32 statistics, as Llama's RMSNorm).
import torch


def rmsnorm(t):
    x, w, y, eps = t.x, t.gamma, t.y, float(t.eps)

    def step():
        xf = x.float()
        r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        torch.mul(w, (xf * r).to(x.dtype), out=y)

    return step
