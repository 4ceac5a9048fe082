# Triton and Liger-Kernel peers of operations/cross_entropy_targets.py (the mean cross-entropy
# against int64 targets drawn by prereg, a 0-dim loss; docs/operations.md).
#
# `ce_targets_triton`: one program per row. The forward streams the row once in BLOCK-wide pieces
# with an online max and sum (fp32) and writes the row's loss lse - x[target] into a [rows] fp32
# scratch made at setup; fwd+bwd streams the row a second time and writes dlogits =
# (exp(x - lse) - onehot) / rows. The step then sums the scratch into the 0-dim loss and divides
# by rows (torch.sum, as Liger's own forward reduces).
# `ce_targets_liger`: Liger-Kernel 0.8.5's kernel launched as LigerCrossEntropyFunction's forward
# launches it (liger_kernel.ops.cross_entropy.cross_entropy_forward) with reduction "mean": it
# writes loss / rows per row into a [rows] scratch, which the step sums into the 0-dim loss. For
# fwd+bwd Liger writes the gradient over its input: the logits are copied into t.dlogits first
# (region `copy`, docs/python-arms.md) and the kernel works on the copy.
# Triton and Liger are imported when this file is; without them the file still imports and the
# entries raise, naming the import error.
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


CE_BLOCK = 4096


def ce_targets_triton(t):
    _need("ce_targets_triton")
    rows, vocab = t.axes["rows"], t.axes["vocab"]
    bwd = t.pass_ == "fwd+bwd"
    dx = t.dlogits if bwd else t.logits  # an unused pointer when BWD is off
    losses = torch.empty(rows, dtype=torch.float32, device=t.logits.device)

    def step():
        _ce_kernel[(rows,)](t.logits, t.targets, losses, dx, vocab, 1.0 / rows, BWD=bwd,
                            BLOCK=CE_BLOCK, num_warps=16)
        torch.sum(losses, dim=0, out=t.loss)
        t.loss.div_(rows)
    return step


def ce_targets_liger(t):
    _need("ce_targets_liger")
    from liger_kernel.ops import cross_entropy as lce
    from liger_kernel.utils import infer_device_arch
    rows, vocab = t.axes["rows"], t.axes["vocab"]
    bwd = t.pass_ == "fwd+bwd"
    block = min(lce.MAX_FUSED_SIZE, triton.next_power_of_2(vocab))
    warps = 8 if (t.logits.element_size() == 2 and infer_device_arch().startswith("blackwell")) else 32
    losses = torch.empty(rows, dtype=torch.float32, device=t.logits.device)

    def launch(x, grads):
        lce.liger_cross_entropy_kernel[(rows,)](
            X_ptr=x, X_stride=x.stride(-2), Y_ptr=t.targets, Y_stride=1, weight_ptr=None,
            loss_ptr=losses, z_loss_ptr=None, loss_stride=1, token_accuracy_ptr=None,
            token_accuracy_stride=0, predicted_tokens_ptr=None, predicted_tokens_stride=0,
            n_cols=vocab, n_non_ignore=rows, sum_non_ignore_weight=rows, weight_sum=0.0,
            ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0, reduction="mean",
            softcap=None, RETURN_Z_LOSS=False, RETURN_TOKEN_ACCURACY=False,
            RETURN_PREDICTED_TOKENS=False, BLOCK_SIZE=block, HAS_WEIGHT=False,
            HAS_SOFTCAPPING=False, HAS_GRADIENTS=grads, num_warps=warps)

    def step():
        if bwd:
            with t.region("copy"):
                t.dlogits.copy_(t.logits)
            launch(t.dlogits, True)
        else:
            launch(t.logits, False)
        torch.sum(losses, dim=0, out=t.loss)
    return step
