# An operation over three named axes (docs/operations.md, "Axes"): a batched rotary embedding,
# y = x * cos + rotate_half(x) * sin, with x and y of dims [b, n, d] (batch, sequence, head
# dim) and the tables cos, sin of dims [n, d] shared by the batch. rotate_half(x) is
# (-x2, x1) for x = (x1, x2) split at d / 2. The reference is numpy float64 (imported inside it,
# so the declaration reads with any Python); CI freezes, runs and audits it
# (tests/e2e/named_axes.sh).


def reference(t):
    """float64 y from float64 x [b, n, d], cos and sin [n, d]."""
    import numpy as np
    h = t.x.shape[-1] // 2
    rotated = np.concatenate([-t.x[..., h:], t.x[..., :h]], axis=-1)
    return {"y": t.x * t.cos + rotated * t.sin}


rotary = {
    "summary": "batched rotary embedding: y = x * cos + rotate_half(x) * sin",
    "axes": ["b", "n", "d"],
    "tensors": [
        {"name": "x", "role": "input", "dims": ["b", "n", "d"], "passes": ["fwd"],
         "dist": {"lo": -2, "hi": 2}},
        {"name": "cos", "role": "input", "dims": ["n", "d"], "passes": ["fwd"],
         "dist": {"lo": -1, "hi": 1}},
        {"name": "sin", "role": "input", "dims": ["n", "d"], "passes": ["fwd"],
         "dist": {"lo": -1, "hi": 1}},
        {"name": "y", "role": "output", "dims": ["b", "n", "d"], "passes": ["fwd"]},
    ],
    # x read and y written once per batch; the tables read once
    "passes": {"fwd": {"bytes": "(2 * b * n * d + 2 * n * d) * s", "flops": "3 * b * n * d"}},
    "tolerance": {"fp32": {"rtol": 1e-5, "atol": 1e-5}},
    "reference": reference,
}
