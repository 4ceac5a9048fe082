# The LLM step's loss as an operation file (docs/operations.md, "The LLM step's operations"):
# cross-entropy of logits [rows, vocab] against integer targets, mean over the rows.
#
#   loss[r]      = logsumexp(logits[r, :]) - logits[r, target[r]]          (fp32, [rows])
#   mean loss    = sum_r loss[r] / rows
#   dlogits[r,:] = (softmax(logits[r, :]) - onehot(target[r])) / rows      (fwd+bwd: the
#                  gradient of the mean loss; the upstream gradient is 1, as in a training step)
#
# The targets: target[r] = (7919 * r + 13) mod vocab, int64. They are part of the operation, not
# a drawn input: the operation-file format has no integer element type (docs/operations.md,
# Limits), so every arm builds this int64 tensor once at setup (`targets` in each arms file of
# kernels/python/llm_*.py) and passes it to its kernel as a model passes its labels. 7919 is
# prime and divides none of the shipped vocabularies, so the targets spread over the whole
# vocabulary. No ignore_index, no label smoothing, no softcap.
# loss is per row (the format has no 0-dim tensor); an arm that computes the mean only writes
# the per-row losses it reduced, which every fused kernel has at hand.
#
# bytes (minimum traffic, issue 34's table): fwd reads the logits once (plus the targets, 8
# bytes a row, and writes the fp32 loss, 4 bytes a row); fwd+bwd reads the logits once and
# writes dlogits once (one fused pass with an online max and sum).
# flops, a convention for a memory-bound operation: 4 per logit forward (max, subtract, exp,
# add), 3 more per logit in fwd+bwd (exp again or reuse, scale, subtract the one-hot).


def _targets(rows, vocab, xp):
    return (7919 * xp.arange(rows) + 13) % vocab


def _rows(x, tgt, bwd, xp):
    """float64 per-row loss (and unscaled softmax - onehot) of a block of rows."""
    m = x.max(-1, keepdims=True) if xp.__name__ == "numpy" else x.amax(-1, keepdim=True)
    e = xp.exp(x - m)
    ssum = e.sum(-1, keepdims=True) if xp.__name__ == "numpy" else e.sum(-1, keepdim=True)
    lse = (xp.log(ssum) + m)[:, 0]
    picked = x[xp.arange(x.shape[0]), tgt]
    g = None
    if bwd:
        g = e / ssum
        g[xp.arange(x.shape[0]), tgt] -= 1.0
    return lse - picked, g


def _on_device(t, torch):
    """Input by name as a float64 tensor on the GPU: prereg's own copy there (t.on_device, no
    trip through the host) or, with a prereg that has none, the numpy copy moved there."""
    ond = getattr(t, "on_device", None)
    if ond is not None:
        return lambda n: getattr(ond, n)
    return lambda n: torch.from_numpy(getattr(t, n)).to("cuda", torch.float64)


def reference(t):
    """float64 loss [rows]; for fwd+bwd also dlogits [rows, vocab]."""
    rows, vocab = t.axes["rows"], t.axes["vocab"]
    bwd = t.pass_ == "fwd+bwd"
    if t.device == "cuda":
        import torch as xp
        x_all = _on_device(t, xp)("logits")
        tgt_all = _targets(rows, vocab, xp).to(x_all.device)
        loss = xp.empty(rows, dtype=xp.float64, device=x_all.device)
        d = xp.empty_like(x_all) if bwd else None
    else:
        import numpy as xp
        x_all, tgt_all = t.logits, _targets(rows, vocab, xp)
        loss = xp.empty(rows)
        d = xp.empty_like(x_all) if bwd else None
    step = max(1, (1 << 27) // vocab)  # rows a block: about 1 GB of float64 temporaries
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        l, g = _rows(x_all[r0:r1], tgt_all[r0:r1], bwd, xp)
        loss[r0:r1] = l
        if bwd:
            d[r0:r1] = g / rows
    out = {"loss": loss}
    if bwd:
        out["dlogits"] = d
    return out


cross_entropy = {
    "summary": "mean cross-entropy of logits [rows, vocab], targets (7919 r + 13) mod vocab; backward dlogits",
    "axes": ["rows", "vocab"],
    "tensors": [
        # logits of a trained model's scale, with a per-row offset (a kernel that skips the max
        # subtraction or mixes rows fails)
        {"name": "logits", "role": "input", "dims": ["rows", "vocab"], "passes": ["fwd", "bwd"],
         "dist": {"lo": -8, "hi": 8, "row_offset": 4}},
        {"name": "loss", "role": "output", "dims": ["rows"], "element": "fp32", "passes": ["fwd"]},
        {"name": "dlogits", "role": "output", "dims": ["rows", "vocab"], "passes": ["bwd"]},
    ],
    "passes": {
        "fwd": {"bytes": "rows * vocab * s + 12 * rows", "flops": "4 * rows * vocab"},
        "fwd+bwd": {"bytes": "2 * rows * vocab * s + 12 * rows", "flops": "7 * rows * vocab"},
    },
    # dlogits are about 1 / (vocab * rows) (1e-9 at 4096 x 151936): the tolerance is relative
    # with a tiny atol, so a zero gradient fails. fp16 is left to prereg's default (its
    # subnormals cannot hold such gradients: use bf16 or fp32).
    "tolerance": {"fp32": {"rtol": 1e-4, "atol": 1e-12},
                  "bf16": {"rtol": 2e-2, "atol": 1e-12}},
    "reference": reference,
}
