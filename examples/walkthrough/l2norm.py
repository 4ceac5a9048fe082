# A row-wise L2 normalisation declared for prereg (docs/operations.md): y = x / sqrt(sum x^2 +
# eps) per row. The operation of docs/walkthrough.md; prereg pins this file at freeze and calls
# `reference` in float64 (numpy, imported inside it).


def reference(t):
    """float64 y from float64 x."""
    import numpy as np
    return {"y": t.x / np.sqrt((t.x * t.x).sum(axis=1, keepdims=True) + t.eps)}


l2norm = {
    "summary": "y = x / sqrt(sum(x^2) + eps) per row",
    "axes": ["rows", "cols"],
    "eps": 1e-12,
    "tensors": [
        {"name": "x", "role": "input", "dims": ["rows", "cols"], "passes": ["fwd"],
         "dist": {"lo": -1, "hi": 1}},
        {"name": "y", "role": "output", "dims": ["rows", "cols"], "passes": ["fwd"]},
    ],
    # read x, write y; a square, a sum and a division per element
    "passes": {"fwd": {"bytes": "2 * rows * cols * s", "flops": "3 * rows * cols"}},
    "reference": reference,
}
