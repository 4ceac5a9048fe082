# GPU hack (side stream): launches the work on a stream of its own and returns without waiting,
# so prereg's events close the window before the kernel ran. Caught by the off-window drain and
# the kernel clock (off-window-work, kernel-above-step).
import torch

_side = {}


def rmsnorm(t):
    x, w, y, eps = t.x, t.gamma, t.y, float(t.eps)
    side = _side.setdefault("s", torch.cuda.Stream())

    def step():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            xf = x.float()
            torch.mul(w, (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype),
                      out=y)

    return step
