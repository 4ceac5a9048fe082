# PyTorch peer arms for LayerNorm and RMSNorm: eager torch.nn.functional, torch.compile of the
# same, and Hugging Face Qwen2's composite RMSNorm written out in torch ops.
#
# Each entry function takes prereg's `t` and returns the step, a zero-argument callable that
# computes the whole pass and returns its outputs as a dict (prereg copies them into its
# buffers for the correctness check, outside the timed window; nothing is copied inside the
# step). The backward is autograd's: the step runs the forward with x, gamma (and beta) as
# leaves that require grad and calls torch.autograd.grad(y, leaves, grad_outputs=t.dy), which
# is how a training step reaches these kernels. The saved statistics are not returned (they
# are optional for Python arms; F.layer_norm does not expose them).
#
# On the cuda device t's tensors are torch tensors viewing prereg's buffers and prereg's stream
# is current, so every kernel here lands on it. The steps make no host synchronisation and
# read no value back (.item(), printing), so they can be captured into a CUDA graph once
# warm. On the cpu device t holds numpy arrays: they are viewed as torch tensors
# (torch.from_numpy, no copy) and the outputs are handed back as numpy arrays.
import torch
import torch.nn.functional as F


def _as_torch(a):
    """a as a torch tensor sharing its memory (numpy arrays on the cpu device)."""
    return a if isinstance(a, torch.Tensor) else torch.from_numpy(a)


def _result_converter(t):
    """How outputs leave the step: torch tensors on cuda, numpy arrays on the cpu device."""
    if t.device == "cpu":
        return lambda v: v.detach().numpy()
    return lambda v: v.detach()


def _norm_step(t, forward, params, grad_names):
    """The step of `forward(*params)`: y for fwd; y and autograd's gradients for fwd+bwd."""
    out = _result_converter(t)
    args = [_as_torch(getattr(t, name)) for name in params]
    if t.pass_ == "fwd":

        def step():
            return {"y": out(forward(*args))}

        return step
    if t.pass_ != "fwd+bwd":
        raise RuntimeError(f"unknown pass {t.pass_!r}")
    # New tensor objects on the same memory, so that requiring grad leaves t's views untouched.
    leaves = [a.detach().requires_grad_() for a in args]
    dy = _as_torch(t.dy)

    def step():
        with torch.enable_grad():
            y = forward(*leaves)
            grads = torch.autograd.grad(y, leaves, grad_outputs=dy)
        result = {"y": out(y)}
        for name, g in zip(grad_names, grads):
            result[name] = out(g)
        return result

    return step


# --- the computations ---------------------------------------------------------------------------


def layer_norm(x, gamma, beta, eps):
    """torch.nn.functional.layer_norm over the last dimension."""
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)


def rms_norm(x, gamma, eps):
    """torch.nn.functional.rms_norm over the last dimension (torch 2.4 and later)."""
    return F.rms_norm(x, (x.shape[-1],), gamma, eps)


def qwen2_rmsnorm(hidden_states, weight, eps):
    """Qwen2RMSNorm.forward of Hugging Face transformers, op for op."""
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + eps)
    return weight * hidden_states.to(input_dtype)


def _need_rms_norm():
    if not hasattr(F, "rms_norm"):
        raise RuntimeError(f"torch {torch.__version__} has no F.rms_norm (torch 2.4 and later)")


def _compiled(fn):
    """torch.compile(fn) for static shapes, with room for one compilation per shape and pass.

    Dynamo keeps compiled variants per Python function, and every setup of an arm compiles
    the same function for a new shape; past its recompile limit (8 by default) it would fall
    back to eager silently, so the limit is raised. dynamic=False: one specialised kernel per
    shape, as a model with fixed shapes gets it. The first call of the step compiles (prereg
    records that call's time apart from the samples).
    """
    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), 1024))
    if hasattr(config, "accumulated_recompile_limit"):
        config.accumulated_recompile_limit = max(config.accumulated_recompile_limit, 4096)
    elif hasattr(config, "accumulated_cache_size_limit"):
        config.accumulated_cache_size_limit = max(config.accumulated_cache_size_limit, 4096)
    return torch.compile(fn, dynamic=False)


# --- entry functions ------------------------------------------------------------------------------


def layernorm_eager(t):
    """PyTorch eager F.layer_norm; backward by autograd (dx, dgamma, dbeta)."""
    eps = float(t.eps)
    return _norm_step(t, lambda x, g, b: layer_norm(x, g, b, eps), ("x", "gamma", "beta"),
                      ("dx", "dgamma", "dbeta"))


def layernorm_compiled(t):
    """torch.compile of F.layer_norm (Inductor); its compiled backward through autograd."""
    eps = float(t.eps)
    fn = _compiled(layer_norm)
    return _norm_step(t, lambda x, g, b: fn(x, g, b, eps), ("x", "gamma", "beta"),
                      ("dx", "dgamma", "dbeta"))


def rmsnorm_eager(t):
    """PyTorch eager F.rms_norm; backward by autograd (dx, dgamma)."""
    _need_rms_norm()
    eps = float(t.eps)
    return _norm_step(t, lambda x, g: rms_norm(x, g, eps), ("x", "gamma"), ("dx", "dgamma"))


def rmsnorm_compiled(t):
    """torch.compile of F.rms_norm (Inductor); its compiled backward through autograd."""
    _need_rms_norm()
    eps = float(t.eps)
    fn = _compiled(rms_norm)
    return _norm_step(t, lambda x, g: fn(x, g, eps), ("x", "gamma"), ("dx", "dgamma"))


def rmsnorm_hf(t):
    """Hugging Face Qwen2RMSNorm's composite in eager torch ops; backward by autograd."""
    eps = float(t.eps)
    return _norm_step(t, lambda x, g: qwen2_rmsnorm(x, g, eps), ("x", "gamma"), ("dx", "dgamma"))


def rmsnorm_hf_compiled(t):
    """torch.compile of the Qwen2RMSNorm composite (what torch.compile(model) makes of it)."""
    eps = float(t.eps)
    fn = _compiled(qwen2_rmsnorm)
    return _norm_step(t, lambda x, g: fn(x, g, eps), ("x", "gamma"), ("dx", "dgamma"))
