# Triton peer arms of the LLM step's memory-bound operations (operations/cross_entropy.py,
# operations/rope.py; SwiGLU's fused Triton arm is swiglu_arms.triton_fused, whose tensor names
# operations/swiglu.py shares), and Liger-Kernel 0.8.5's ops as Python arms.
#
# `ce_triton`: one program per row. The forward streams the row once in BLOCK-wide pieces with an
# online max and sum (fp32) and writes loss = lse - x[target]; fwd+bwd then streams the row a
# second time and writes dlogits = (exp(x - lse) - onehot) / rows (the second read mostly from
# L2: a 151936-wide bf16 row is 297 KB). No fp32 copy of the logits.
# `rope_triton`: one program per (batch, head, position) row of q or k: loads both halves and
# the first halves of the tables, writes the rotated row (fwd+bwd: the inverse rotation of the
# incoming gradients). Two launches a pass (q, then k).
# Liger arms (`ce_liger`, `rope_liger`, `swiglu_liger`) call Liger-Kernel's own launch functions
# or kernels (liger_kernel.ops.cross_entropy / rope / swiglu). Liger computes in place where a
# model lets it (the CE gradient over the logits, SwiGLU's da, db over a, b); prereg's inputs
# are never written, so those arms first copy the inputs the kernel overwrites, inside the step
# and inside a region `copy` (docs/python-arms.md, Regions), so the copy's share is reported.
# Triton and Liger are imported when this file is; without them the file still imports and
# the entries raise, naming the import error.
try:
    import torch
except ImportError:  # the CPU tests import-check this file without torch
    torch = None
try:
    import triton
    import triton.language as tl
except ImportError as error:
    triton = None
    _import_error = f"{type(error).__name__}: {error}"
else:
    _import_error = None


def _need(what):
    if triton is None:
        raise RuntimeError(f"{what}: triton is not importable here: {_import_error}")


def _targets(rows, vocab, device):
    """operations/cross_entropy.py's targets: (7919 r + 13) mod vocab, int64."""
    return (7919 * torch.arange(rows, dtype=torch.int64, device=device) + 13) % vocab


if triton is not None:

    @triton.jit
    def _ce_kernel(X, T, LOSS, DX, vocab, inv_rows, BWD: tl.constexpr, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        x_row = X + row * vocab
        tgt = tl.load(T + row)
        m = tl.full([BLOCK], float("-inf"), tl.float32)
        acc = tl.zeros([BLOCK], tl.float32)
        for start in range(0, vocab, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + offs, mask=offs < vocab, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            # lanes still at -inf keep acc 0 (exp(-inf - -inf) would be nan)
            scale = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
            acc = acc * scale + tl.where(x == float("-inf"), 0.0, tl.exp(x - m_new))
            m = m_new
        m_row = tl.max(m, 0)
        s_row = tl.sum(acc * tl.where(m == float("-inf"), 0.0, tl.exp(m - m_row)), 0)
        lse = m_row + tl.log(s_row)
        x_t = tl.load(x_row + tgt).to(tl.float32)
        tl.store(LOSS + row, lse - x_t)
        if BWD:
            d_row = DX + row * vocab
            for start in range(0, vocab, BLOCK):
                offs = start + tl.arange(0, BLOCK)
                x = tl.load(x_row + offs, mask=offs < vocab, other=0.0).to(tl.float32)
                g = tl.exp(x - lse) - tl.where(offs == tgt, 1.0, 0.0)
                tl.store(d_row + offs, (g * inv_rows).to(DX.dtype.element_ty), mask=offs < vocab)

    @triton.jit
    def _rope_kernel(X, C, S, Y, seq, d_table, sign, HALF: tl.constexpr, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)  # a (batch, head, position) row of x
        pos = row % seq
        offs = tl.arange(0, BLOCK)
        m = offs < HALF
        x1 = tl.load(X + row * 2 * HALF + offs, mask=m, other=0.0).to(tl.float32)
        x2 = tl.load(X + row * 2 * HALF + HALF + offs, mask=m, other=0.0).to(tl.float32)
        c = tl.load(C + pos * d_table + offs, mask=m, other=0.0).to(tl.float32)
        s = tl.load(S + pos * d_table + offs, mask=m, other=0.0).to(tl.float32) * sign
        tl.store(Y + row * 2 * HALF + offs, (x1 * c - x2 * s).to(Y.dtype.element_ty), mask=m)
        tl.store(Y + row * 2 * HALF + HALF + offs, (x2 * c + x1 * s).to(Y.dtype.element_ty), mask=m)


CE_BLOCK = 4096


def ce_triton(t):
    _need("ce_triton")
    rows, vocab = t.axes["rows"], t.axes["vocab"]
    tgt = _targets(rows, vocab, t.logits.device)
    bwd = t.pass_ == "fwd+bwd"
    dx = t.dlogits if bwd else t.logits  # an unused pointer when BWD is off

    def step():
        _ce_kernel[(rows,)](t.logits, tgt, t.loss, dx, vocab, 1.0 / rows, BWD=bwd, BLOCK=CE_BLOCK,
                            num_warps=16)
    return step


def _rope_launch(x, cos, sin, y, sign):
    d = x.shape[-1]
    n_rows = x.numel() // d
    _rope_kernel[(n_rows,)](x, cos, sin, y, x.shape[-2], cos.shape[-1], sign, HALF=d // 2,
                            BLOCK=triton.next_power_of_2(d // 2), num_warps=1)


def rope_triton(t):
    _need("rope_triton")

    def step():
        _rope_launch(t.q, t.cos, t.sin, t.q_out, 1.0)
        _rope_launch(t.k, t.cos, t.sin, t.k_out, 1.0)
        if t.pass_ == "fwd+bwd":
            _rope_launch(t.dq_out, t.cos, t.sin, t.dq, -1.0)
            _rope_launch(t.dk_out, t.cos, t.sin, t.dk, -1.0)
    return step


# --- Liger-Kernel 0.8.5 --------------------------------------------------------------------------


def ce_liger(t):
    """Liger's cross-entropy kernel, launched as LigerCrossEntropyFunction's forward launches it
    (liger_kernel.ops.cross_entropy.cross_entropy_forward) but on prereg's buffers and without
    its host reads (.item() of the non-ignored count: here every row counts). fwd: reduction
    'none', the per-row loss straight into t.loss. fwd+bwd: the logits copied into t.dlogits
    (region `copy`; Liger overwrites its input with the gradient), then reduction 'mean': the
    kernel writes the gradient of the mean over the copy and loss / rows per row (t.loss is
    multiplied back by rows, rows elements)."""
    _need("ce_liger")
    from liger_kernel.ops import cross_entropy as lce
    from liger_kernel.utils import infer_device_arch
    rows, vocab = t.axes["rows"], t.axes["vocab"]
    tgt = _targets(rows, vocab, t.logits.device)
    bwd = t.pass_ == "fwd+bwd"
    block = min(lce.MAX_FUSED_SIZE, triton.next_power_of_2(vocab))
    warps = 8 if (t.logits.element_size() == 2 and infer_device_arch().startswith("blackwell")) else 32

    def launch(x, reduction, grads):
        lce.liger_cross_entropy_kernel[(rows,)](
            X_ptr=x, X_stride=x.stride(-2), Y_ptr=tgt, Y_stride=1, weight_ptr=None,
            loss_ptr=t.loss, z_loss_ptr=None, loss_stride=1, token_accuracy_ptr=None,
            token_accuracy_stride=0, predicted_tokens_ptr=None, predicted_tokens_stride=0,
            n_cols=vocab, n_non_ignore=rows, sum_non_ignore_weight=rows, weight_sum=0.0,
            ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0, reduction=reduction,
            softcap=None, RETURN_Z_LOSS=False, RETURN_TOKEN_ACCURACY=False,
            RETURN_PREDICTED_TOKENS=False, BLOCK_SIZE=block, HAS_WEIGHT=False,
            HAS_SOFTCAPPING=False, HAS_GRADIENTS=grads, num_warps=warps)

    if not bwd:
        def fwd():
            launch(t.logits, "none", False)
        return fwd

    def fwd_bwd():
        with t.region("copy"):
            t.dlogits.copy_(t.logits)
        launch(t.dlogits, "mean", True)
        t.loss.mul_(rows)
    return fwd_bwd


def rope_liger(t):
    """liger_kernel.ops.rope.rope_forward / rope_backward on [batch, heads, seq, head_dim] q, k
    (as LigerRopeFunction calls them; they make the [batch, seq, heads, head_dim] copies the
    kernel works in place on). Where that transpose is already contiguous (one position or one
    head) Liger would rotate prereg's inputs in place: those are copied first (region `copy`),
    into the layout a model's attention hands Liger (transformers' view(b, s, h, d).transpose(1,
    2)). Not a clone: Liger 0.8.5 reads the row stride from dim 1 of its transposed view, and
    for a contiguous [b, h, 1, d] tensor that size-1 dim's stride is d, not h * d (torch ignores
    the stride of a size-1 dim when it calls a tensor contiguous), so with batch > 1 at seq 1
    (decode) it rotates the wrong rows: the failure the first H200 pilot showed."""
    _need("rope_liger")
    from liger_kernel.ops.rope import rope_backward, rope_forward
    in_place = t.axes["seq"] == 1 or min(t.axes["heads"], t.axes["kv_heads"]) == 1

    def own(*xs):
        if not in_place:
            return xs
        with t.region("copy"):
            out = []
            for x in xs:
                b, h, s, d = x.shape
                y = torch.empty((b, s, h, d), dtype=x.dtype, device=x.device)
                y.copy_(x.transpose(1, 2))
                out.append(y.transpose(1, 2))
            return tuple(out)

    def step():
        q, k = own(t.q, t.k)
        qo, ko, _, _ = rope_forward(q, k, t.cos, t.sin)
        r = {"q_out": qo, "k_out": ko}
        if t.pass_ == "fwd+bwd":
            dq, dk = own(t.dq_out, t.dk_out)
            r["dq"], r["dk"] = rope_backward(dq, dk, t.cos, t.sin)
        return r
    return step


def swiglu_liger(t):
    """liger_kernel.ops.swiglu.swiglu_forward (y allocated by Liger, handed back to prereg) and
    swiglu_backward, which writes da, db over its a, b: those are copies of prereg's a, b made in
    the step (region `copy`)."""
    _need("swiglu_liger")
    from liger_kernel.ops.swiglu import swiglu_backward, swiglu_forward

    def step():
        _, _, y = swiglu_forward(t.a, t.b)
        if t.pass_ == "fwd":
            return {"y": y}
        with t.region("copy"):
            a, b = t.a.clone(), t.b.clone()
        da, db = swiglu_backward(a, b, t.dy)
        return {"y": y, "da": da, "db": db}
    return step
