# PyTorch peer arms of the LLM step's operations (operations/*.py; docs/operations.md, "The LLM
# step's operations"): torch eager, torch.compile of the same code, cuBLAS through torch.matmul
# for matmul and torch's SDPA backends (flash, efficient, cuDNN, math) for attention.
#
# Each entry takes prereg's `t` and returns the step. Outputs either land in t's buffers
# (out=) or are returned as a dict (prereg copies them into its buffers outside the timed
# window, as in torch_norms.py). The backward is autograd's where a model gets it from autograd:
# leaves that require grad, torch.autograd.grad(outputs, leaves, grad_outputs) inside the step.
# The steps make no host synchronisation, so `launch: graph` can capture them once warm.
# These arms run on the cuda device; kernels/python/llm_numpy.py holds the CPU arms.
try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the CPU tests import-check this file without torch
    torch = None


def _targets(rows, vocab, device):
    """operations/cross_entropy.py's targets: (7919 r + 13) mod vocab, int64."""
    return (7919 * torch.arange(rows, dtype=torch.int64, device=device) + 13) % vocab


def _compiled(fn):
    """torch.compile(fn) for static shapes, room for a compilation per shape and pass (as in
    torch_norms.py: the arms compile the same function for every shape of a protocol)."""
    import torch._dynamo.config as config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), 4096))
    if hasattr(config, "accumulated_recompile_limit"):
        config.accumulated_recompile_limit = max(config.accumulated_recompile_limit, 4096)
    return torch.compile(fn, dynamic=False)


def _grad_step(t, forward, inputs, grad_names, out_names, grad_outputs):
    """The step of forward(*inputs) -> tuple of outputs: the outputs for fwd; for fwd+bwd also
    autograd's gradients of `inputs` against `grad_outputs` (names of t's tensors)."""
    args = [getattr(t, n) for n in inputs]
    if t.pass_ == "fwd":
        def step():
            with torch.no_grad():
                outs = forward(*args)
            return dict(zip(out_names, outs))
        return step
    leaves = [a.detach().requires_grad_() for a in args]
    gouts = [getattr(t, n) for n in grad_outputs]

    def step():
        with torch.enable_grad():
            outs = forward(*leaves)
            grads = torch.autograd.grad(outs[:len(gouts)], leaves, grad_outputs=gouts)
        r = {n: o.detach() for n, o in zip(out_names, outs)}
        r.update(zip(grad_names, grads))
        return r
    return step


# --- matmul ------------------------------------------------------------------------------------


def matmul_cublas(t):
    """torch.matmul into prereg's buffers (cuBLAS); fwd+bwd: the two GEMMs autograd runs."""
    a, b, c = t.a, t.b, t.c
    if t.pass_ == "fwd":
        def fwd():
            torch.matmul(a, b, out=c)
        return fwd
    dc = t.dc

    def fwd_bwd():
        torch.matmul(a, b, out=c)
        torch.matmul(dc, b.t(), out=t.da)
        torch.matmul(a.t(), dc, out=t.db)
    return fwd_bwd


def _mm(a, b):
    return (a @ b,)


def matmul_compiled(t):
    """torch.compile of a @ b (Inductor's default mode), autograd's backward."""
    return _grad_step(t, _compiled(_mm), ["a", "b"], ["da", "db"], ["c"], ["dc"])


# --- attention ---------------------------------------------------------------------------------


def _mask_args(t):
    """SDPA's causal arguments for bottom-right causal attention (operations/attention.py)."""
    if t.operation != "attention_causal":
        return {}
    sq, sk = t.axes["seq_q"], t.axes["seq_k"]
    if sq == sk:
        return {"is_causal": True}
    if sq == 1:
        return {}  # one query at the end of the cache sees every key
    from torch.nn.attention.bias import causal_lower_right
    return {"attn_mask": causal_lower_right(sq, sk)}


def _sdpa(backend, repeat_kv):
    def entry(t):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        chosen = getattr(SDPBackend, backend)
        extra = _mask_args(t)
        g = t.axes["heads"] // t.axes["kv_heads"]

        def forward(q, k, v):
            with sdpa_kernel(chosen):
                if repeat_kv and g > 1:  # transformers' repeat_kv: expand the kv heads first
                    k = k.repeat_interleave(g, dim=1)
                    v = v.repeat_interleave(g, dim=1)
                    return (F.scaled_dot_product_attention(q, k, v, **extra),)
                return (F.scaled_dot_product_attention(q, k, v, enable_gqa=g > 1, **extra),)
        return _grad_step(t, forward, ["q", "k", "v"], ["dq", "dk", "dv"], ["o"], ["do"])
    return entry


sdpa_flash = _sdpa("FLASH_ATTENTION", False)
sdpa_efficient = _sdpa("EFFICIENT_ATTENTION", False)
sdpa_cudnn = _sdpa("CUDNN_ATTENTION", False)
sdpa_math = _sdpa("MATH", False)
# The same with the kv heads expanded in the step (transformers' sdpa path where SDPA's
# enable_gqa is not used; also the way to run a backend that does not take GQA)
sdpa_flash_repeat = _sdpa("FLASH_ATTENTION", True)
sdpa_efficient_repeat = _sdpa("EFFICIENT_ATTENTION", True)
sdpa_cudnn_repeat = _sdpa("CUDNN_ATTENTION", True)


def _attention_eager(q, k, v, g, causal_offset):
    """transformers' eager attention: repeat_kv, q kᵀ scaled, mask, softmax in fp32, @ v."""
    if g > 1:
        k = k.repeat_interleave(g, dim=1)
        v = v.repeat_interleave(g, dim=1)
    s = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    if causal_offset is not None:
        sq, sk = s.shape[-2], s.shape[-1]
        i = torch.arange(sq, device=s.device).view(sq, 1)
        j = torch.arange(sk, device=s.device).view(1, sk)
        s = s.masked_fill(j > i + causal_offset, float("-inf"))
    p = torch.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
    return (torch.matmul(p, v),)


def _attention_arm(t, compile_it):
    g = t.axes["heads"] // t.axes["kv_heads"]
    off = t.axes["seq_k"] - t.axes["seq_q"] if t.operation == "attention_causal" else None
    fn = _compiled(_attention_eager) if compile_it else _attention_eager
    return _grad_step(t, lambda q, k, v: fn(q, k, v, g, off), ["q", "k", "v"], ["dq", "dk", "dv"],
                      ["o"], ["do"])


def attention_eager(t):
    return _attention_arm(t, False)


def attention_compiled(t):
    return _attention_arm(t, True)


# --- cross-entropy -----------------------------------------------------------------------------


def _ce(logits, target):
    """transformers' loss: the logits upcast to fp32, per-row losses; fwd+bwd: their mean."""
    loss = F.cross_entropy(logits.float(), target, reduction="none")
    return loss.mean(), loss


def _ce_arm(t, compile_it):
    tgt = _targets(t.axes["rows"], t.axes["vocab"], t.logits.device)
    fn = _compiled(_ce) if compile_it else _ce
    if t.pass_ == "fwd":
        def fwd():
            with torch.no_grad():
                return {"loss": fn(t.logits, tgt)[1]}
        return fwd
    x = t.logits.detach().requires_grad_()

    def fwd_bwd():
        with torch.enable_grad():
            mean, loss = fn(x, tgt)
            (g,) = torch.autograd.grad(mean, (x,))
        return {"loss": loss.detach(), "dlogits": g}
    return fwd_bwd


def cross_entropy_eager(t):
    return _ce_arm(t, False)


def cross_entropy_compiled(t):
    return _ce_arm(t, True)


# --- RoPE --------------------------------------------------------------------------------------


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def _rope(q, k, cos, sin):
    """transformers' apply_rotary_pos_emb, its full tables built from the first halves."""
    h = cos.shape[-1] // 2
    c = torch.cat((cos[:, :h], cos[:, :h]), dim=-1)
    s = torch.cat((sin[:, :h], sin[:, :h]), dim=-1)
    return q * c + _rotate_half(q) * s, k * c + _rotate_half(k) * s


def _rope_arm(t, compile_it):
    fn = _compiled(_rope) if compile_it else _rope
    cos, sin = t.cos, t.sin
    return _grad_step(t, lambda q, k: fn(q, k, cos, sin), ["q", "k"], ["dq", "dk"],
                      ["q_out", "k_out"], ["dq_out", "dk_out"])


def rope_eager(t):
    return _rope_arm(t, False)


def rope_compiled(t):
    return _rope_arm(t, True)


# --- SwiGLU (eager: swiglu_arms.torch_eager) ---------------------------------------------------


def _swiglu(a, b):
    return (F.silu(a) * b,)


def swiglu_autograd(t):
    """F.silu(a) * b in eager torch with autograd's backward (a model's MLP)."""
    return _grad_step(t, _swiglu, ["a", "b"], ["da", "db"], ["y"], ["dy"])


def swiglu_compiled(t):
    """torch.compile of F.silu(a) * b, autograd's (compiled) backward."""
    return _grad_step(t, _compiled(_swiglu), ["a", "b"], ["da", "db"], ["y"], ["dy"])
