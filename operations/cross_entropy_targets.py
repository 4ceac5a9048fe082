# The LLM step's loss with real targets (docs/operations.md, "The LLM step's operations"): the mean
# cross-entropy of logits [rows, vocab] against int64 targets drawn in [0, vocab), one number.
#
#   loss         = sum_r (logsumexp(logits[r, :]) - logits[r, targets[r]]) / rows   (fp32, 0-dim)
#   dlogits[r,:] = (softmax(logits[r, :]) - onehot(targets[r])) / rows              (fwd+bwd: the
#                  gradient of the mean loss; the upstream gradient is 1, as in a training step)
#
# This replaces operations/cross_entropy.py's fixed-function targets ((7919 r + 13) mod vocab,
# built by each arm) and per-row loss, which stay as they were for the protocols and reports that
# name them: the targets are an input here, drawn by prereg (a kernel that reads the wrong target
# or ignores it fails), and the loss is the 0-dim mean a training step reduces to. No
# ignore_index, no label smoothing, no softcap.
#
# bytes (minimum traffic): fwd reads the logits and the targets once and writes the loss;
# fwd+bwd reads them once and writes dlogits and the loss (one fused pass with an online max and
# sum). s_targets is 8 (int64), s_loss 4 (fp32).
# flops, a convention for a memory-bound operation: 4 a logit forward (max, subtract, exp, add),
# 3 more a logit in fwd+bwd (exp again or reuse, scale, subtract the one-hot).


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
    """Input by name as a tensor on the GPU (float64, or int64 for an integer input): prereg's own
    copy there (t.on_device, no trip through the host) or the numpy copy moved there."""
    ond = getattr(t, "on_device", None)
    if ond is not None:
        return lambda n: getattr(ond, n)
    return lambda n: torch.from_numpy(getattr(t, n)).to("cuda")


def reference(t):
    """float64 loss [] (the mean over the rows); for fwd+bwd also dlogits [rows, vocab]."""
    rows, vocab = t.axes["rows"], t.axes["vocab"]
    bwd = t.pass_ == "fwd+bwd"
    if t.device == "cuda":
        import torch as xp
        x_all = _on_device(t, xp)("logits")
        tgt_all = _on_device(t, xp)("targets")
        losses = xp.empty(rows, dtype=xp.float64, device=x_all.device)
        d = xp.empty_like(x_all) if bwd else None
    else:
        import numpy as xp
        x_all, tgt_all = t.logits, t.targets
        losses = xp.empty(rows)
        d = xp.empty_like(x_all) if bwd else None
    step = max(1, (1 << 27) // vocab)  # rows a block: about 1 GB of float64 temporaries
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        l, g = _rows(x_all[r0:r1], tgt_all[r0:r1], bwd, xp)
        losses[r0:r1] = l
        if bwd:
            d[r0:r1] = g / rows
    out = {"loss": losses.sum() / rows}
    if bwd:
        out["dlogits"] = d
    return out


cross_entropy_targets = {
    "summary": "mean cross-entropy of logits [rows, vocab] against int64 targets in [0, vocab); "
               "the loss is 0-dim; backward dlogits",
    "axes": ["rows", "vocab"],
    "tensors": [
        # logits of a trained model's scale, with a per-row offset (a kernel that skips the max
        # subtraction or mixes rows fails)
        {"name": "logits", "role": "input", "dims": ["rows", "vocab"], "passes": ["fwd", "bwd"],
         "dist": {"lo": -8, "hi": 8, "row_offset": 4}},
        {"name": "targets", "role": "input", "dims": ["rows"], "element": "int64",
         "passes": ["fwd", "bwd"], "dist": {"int": [0, "vocab"]}},
        {"name": "loss", "role": "output", "dims": [], "element": "fp32", "passes": ["fwd"]},
        {"name": "dlogits", "role": "output", "dims": ["rows", "vocab"], "passes": ["bwd"]},
    ],
    "passes": {
        "fwd": {"bytes": "rows * vocab * s + rows * s_targets + s_loss",
                "flops": "4 * rows * vocab"},
        "fwd+bwd": {"bytes": "2 * rows * vocab * s + rows * s_targets + s_loss",
                    "flops": "7 * rows * vocab"},
    },
    # dlogits are about 1 / (vocab * rows) (1e-9 at 4096 x 151936): relative with a tiny atol, so
    # a zero gradient fails. The loss is one number, compared by the same rule. fp16 is left to
    # prereg's default (its subnormals cannot hold such gradients: use bf16 or fp32).
    "tolerance": {"fp32": {"rtol": 1e-4, "atol": 1e-12},
                  "bf16": {"rtol": 2e-2, "atol": 1e-12}},
    "reference": reference,
}
