# PyTorch peer arms of the operations with typed tensors (operations/cross_entropy_targets.py,
# fp8_gemm.py, fp8_quant.py, embedding.py; docs/operations.md, "The LLM step's operations"):
# torch eager, torch.compile of the same code, torch._scaled_mm for the FP8 GEMM.
#
# Each entry takes prereg's `t` (int64 tensors are torch.int64, fp8 ones torch.float8_e4m3fn,
# 0-dim ones 0-dim tensors) and returns the step; outputs land in t's buffers (out=, copy_) or
# are returned as a dict (prereg copies them outside the timed window). The backward is
# autograd's, as a model gets it. The steps make no host synchronisation.
# These arms run on the cuda device; kernels/python/typed_numpy.py holds the CPU arms, and
# kernels/python/cublaslt_fp8.py the FP8 GEMM through cuBLASLt directly.
try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the CPU tests import-check this file without torch
    torch = None


def _compiled(fn):
    """torch.compile(fn) for static shapes, room for a compilation per shape and pass (as in
    llm_torch.py)."""
    import torch._dynamo.config as config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), 4096))
    if hasattr(config, "accumulated_recompile_limit"):
        config.accumulated_recompile_limit = max(config.accumulated_recompile_limit, 4096)
    return torch.compile(fn, dynamic=False)


# --- cross-entropy with real targets ------------------------------------------------------------


def _ce(logits, targets):
    """transformers' loss: the logits upcast to fp32, the mean over the rows."""
    return F.cross_entropy(logits.float(), targets)


def _ce_arm(t, compile_it):
    fn = _compiled(_ce) if compile_it else _ce
    if t.pass_ == "fwd":
        def fwd():
            with torch.no_grad():
                t.loss.copy_(fn(t.logits, t.targets))
        return fwd
    x = t.logits.detach().requires_grad_()

    def fwd_bwd():
        with torch.enable_grad():
            loss = fn(x, t.targets)
            (g,) = torch.autograd.grad(loss, (x,))
        t.loss.copy_(loss.detach())
        return {"dlogits": g}
    return fwd_bwd


def cross_entropy_targets_eager(t):
    return _ce_arm(t, False)


def cross_entropy_targets_compiled(t):
    return _ce_arm(t, True)


# --- FP8 GEMM ------------------------------------------------------------------------------------


def fp8_gemm_scaled_mm(t):
    """torch._scaled_mm(a, b^T, scale_a, scale_b, out_dtype): cuBLASLt's FP8 GEMM as torch calls
    it. b [n, k] row-major transposed is the column-major [k, n] operand it wants; the 0-dim fp32
    scales are per-tensor scales; c is written in place (out=)."""
    out_dtype = t.c.dtype

    def step():
        torch._scaled_mm(t.a, t.b.t(), scale_a=t.scale_a, scale_b=t.scale_b,
                         out_dtype=out_dtype, out=t.c)
    return step


def fp8_gemm_scaled_mm_fast(t):
    """torch._scaled_mm with use_fast_accum=True (Hopper's FP8 MMA accumulates without promoting
    its partial sums to fp32 between K-chunks: faster, fewer bits; what inference engines pick)."""
    out_dtype = t.c.dtype

    def step():
        torch._scaled_mm(t.a, t.b.t(), scale_a=t.scale_a, scale_b=t.scale_b,
                         out_dtype=out_dtype, use_fast_accum=True, out=t.c)
    return step


def _gemm_upcast(a, b, scale_a, scale_b, out_dtype):
    """What a model without FP8 kernels does: dequantise to bf16 and multiply."""
    return ((a.to(torch.bfloat16) @ b.to(torch.bfloat16).t()).float() * (scale_a * scale_b)).to(out_dtype)


def fp8_gemm_upcast(t):
    """The FP8 operands upcast to bf16 and multiplied by cuBLAS (the baseline FP8 is meant to
    beat), the scales applied to the fp32 result."""
    def step():
        t.c.copy_(_gemm_upcast(t.a, t.b, t.scale_a, t.scale_b, t.c.dtype))
    return step


# --- row-wise fp8 quantisation -----------------------------------------------------------------------


def _quant(x):
    """torchao's float8 row-wise recipe: amax per row in fp32, scale = amax / 448, q = x / scale
    saturated to e4m3's range and cast."""
    amax = x.abs().amax(-1).float()
    scale = amax / 448.0
    q = (x.float() / scale[:, None]).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return q, scale


def _quant_arm(t, compile_it):
    fn = _compiled(_quant) if compile_it else _quant

    def step():
        q, scale = fn(t.x)
        t.q.copy_(q)
        t.scale.copy_(scale)
    return step


def quant_fp8_rowwise_eager(t):
    return _quant_arm(t, False)


def quant_fp8_rowwise_compiled(t):
    return _quant_arm(t, True)


# --- embedding -------------------------------------------------------------------------------------


def embedding_eager(t):
    """torch.index_select of whole rows into y: the gather nn.Embedding's forward runs."""
    def step():
        torch.index_select(t.table, 0, t.ids, out=t.y)
    return step


def embedding_compiled(t):
    fn = _compiled(F.embedding)

    def step():
        t.y.copy_(fn(t.ids, t.table))
    return step
