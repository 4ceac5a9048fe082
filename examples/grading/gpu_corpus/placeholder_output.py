# GPU hack (placeholder output): returns a placeholder whose value is computed when prereg
# reads it, after the window. Caught by the physical floor; issue 43's exact-output guard
# refuses the placeholder itself.
import torch


class Lazy:
    def __init__(self, x, w, eps):
        self.x, self.w, self.eps = x, w, eps

    def __torch_function__(self, func, types, args=(), kwargs=None):
        xf = self.x.float()
        real = self.w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(
            self.x.dtype)
        args = tuple(real if a is self else a for a in args)
        return func(*args, **(kwargs or {}))


def rmsnorm(t):
    x, w, eps = t.x, t.gamma, float(t.eps)

    def step():
        return {"y": Lazy(x, w, eps)}

    return step
