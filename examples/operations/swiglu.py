# An operation declared outside prereg (docs/operations.md, "Bring your own operation"):
# SwiGLU's gate, y = silu(a) * b, with its backward. prereg reads the dict `swiglu` (plain data
# plus the reference function), pins this file by SHA-256 at freeze and calls `reference` in
# float64: numpy on the CPU, torch on the GPU. Both are imported inside the reference, so the
# declaration reads with any Python (check, canon and freeze read it; only a run calls reference).


def reference(t):
    """float64 outputs of the pass from float64 inputs: y; for fwd+bwd also da, db."""
    import numpy as np
    if t.device == "cuda":
        import torch
        a, b = (torch.from_numpy(v).to("cuda", torch.float64) for v in (t.a, t.b))
        sig = torch.sigmoid(a)
        out = {"y": a * sig * b}
        if t.pass_ == "fwd+bwd":
            dy = torch.from_numpy(t.dy).to("cuda", torch.float64)
            out["da"] = dy * b * sig * (1 + a * (1 - sig))
            out["db"] = dy * a * sig
        return out
    sig = 1.0 / (1.0 + np.exp(-t.a))
    out = {"y": t.a * sig * t.b}
    if t.pass_ == "fwd+bwd":
        out["da"] = t.dy * t.b * sig * (1 + t.a * (1 - sig))
        out["db"] = t.dy * t.a * sig
    return out


rc = ["rows", "cols"]

swiglu = {
    "summary": "y = silu(a) * b elementwise (SwiGLU's gate); backward da, db",
    "axes": ["rows", "cols"],
    "tensors": [
        {"name": "a", "role": "input", "dims": rc, "passes": ["fwd", "bwd"],
         "dist": {"lo": -6, "hi": 6}},
        {"name": "b", "role": "input", "dims": rc, "passes": ["fwd", "bwd"],
         "dist": {"lo": -2, "hi": 2}},
        {"name": "dy", "role": "input", "dims": rc, "passes": ["bwd"],
         "dist": {"lo": -1, "hi": 1}},
        {"name": "y", "role": "output", "dims": rc, "passes": ["fwd"]},
        {"name": "da", "role": "output", "dims": rc, "passes": ["bwd"]},
        {"name": "db", "role": "output", "dims": rc, "passes": ["bwd"]},
    ],
    "passes": {
        # read a, b; write y
        "fwd": {"bytes": "3 * rows * cols * s", "flops": "5 * rows * cols"},
        # the forward, then read a, b, dy; write da, db
        "fwd+bwd": {"bytes": "8 * rows * cols * s", "flops": "16 * rows * cols"},
    },
    "tolerance": {
        "fp32": {"rtol": 1e-5, "atol": 1e-5},
        "fp16": {"rtol": 2e-3, "atol": 2e-3},
        "bf16": {"rtol": 1.6e-2, "atol": 1e-2},
    },
    "reference": reference,
}
