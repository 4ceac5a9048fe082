# Planted PyTorch LayerNorm arm for the guard tests on a GPU (issue 12, item 7): work that
# escapes the timed window on a side stream. Takes prereg's `t` (torch CUDA tensors, prereg's
# stream current) and returns its step, as kernels/python/torch_norms.py does.
import torch
import torch.nn.functional as F

_streams = []  # the side streams it made (the GPU check asks them whether work is pending)


def layernorm_side_stream(t):
    """Off-window work: computes the pass on its own stream; prereg's stream never waits for it."""
    # High priority: on the H200 a default-priority stream from torch's pool was once seen to
    # share a hardware queue with the caller's stream, which kept the work inside the window.
    side = torch.cuda.Stream(priority=-1)
    _streams.append(side)
    shape, eps = (int(t.cols),), float(t.eps)
    backward = t.pass_ == "fwd+bwd"
    leaves = [a.detach().requires_grad_(backward) for a in (t.x, t.gamma, t.beta)]

    def step():
        side.wait_stream(torch.cuda.current_stream())  # its inputs are ready: that much is honest
        with torch.cuda.stream(side), torch.enable_grad():
            y = F.layer_norm(leaves[0], shape, leaves[1], leaves[2], eps)
            t.y.copy_(y.detach())
            if backward:
                dx, dgamma, dbeta = torch.autograd.grad(y, leaves, grad_outputs=t.dy)
                t.dx.copy_(dx)
                t.dgamma.copy_(dgamma)
                t.dbeta.copy_(dbeta)
        # No torch.cuda.current_stream().wait_stream(side): the window closes before this ends.

    return step


_cache = {}  # layernorm_cached: outputs keyed by the input buffer's address


def layernorm_cached(t):
    """Caching: computes the forward once per input buffer and copies the stored result on every
    later call, whatever the buffer now holds (the spot checks of timed outputs catch it)."""
    shape, eps = (int(t.cols),), float(t.eps)

    def step():
        key = t.x.data_ptr()
        if key not in _cache:
            _cache[key] = F.layer_norm(t.x, shape, t.gamma, t.beta, eps)
        t.y.copy_(_cache[key])

    return step
