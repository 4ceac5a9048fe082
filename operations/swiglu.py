# SwiGLU's gate as a shipped operation file (docs/operations.md, "The LLM step's operations"):
# y = silu(a) * b over [rows, cols], silu(a) = a * sigmoid(a); fwd+bwd from dy:
# da = dy * b * sig * (1 + a * (1 - sig)), db = dy * silu(a).
# The same arithmetic as examples/operations/swiglu.py (the walkthrough's example); the
# difference is the bytes model of fwd+bwd: this file counts the minimum traffic of issue 34's
# table, each tensor once (a, b, dy read; y, da, db written: 6 tensors), where the example counts
# the forward and the backward as two passes (8). The reference is float64: numpy on the CPU,
# torch on the GPU.
# flops: 5 per element forward (exp, add, divide, two multiplies), 11 more for the backward.


def _on_device(t, torch):
    """Input by name as a float64 tensor on the GPU: prereg's own copy there (t.on_device, no
    trip through the host) or, with a prereg that has none, the numpy copy moved there."""
    ond = getattr(t, "on_device", None)
    if ond is not None:
        return lambda n: getattr(ond, n)
    return lambda n: torch.from_numpy(getattr(t, n)).to("cuda", torch.float64)


def reference(t):
    """float64 y; for fwd+bwd also da, db."""
    if t.device == "cuda":
        import torch as xp
        dev = _on_device(t, xp)
    else:
        import numpy as xp
        dev = lambda n: getattr(t, n)  # noqa: E731
    a, b = dev("a"), dev("b")
    sig = 1.0 / (1.0 + xp.exp(-a))
    out = {"y": a * sig * b}
    if t.pass_ == "fwd+bwd":
        dy = dev("dy")
        out["da"] = dy * b * sig * (1 + a * (1 - sig))
        out["db"] = dy * a * sig
    return out


rc = ["rows", "cols"]

swiglu = {
    "summary": "y = silu(a) * b elementwise (SwiGLU's gate); backward da, db",
    "axes": ["rows", "cols"],
    "tensors": [
        {"name": "a", "role": "input", "dims": rc, "passes": ["fwd", "bwd"], "dist": {"lo": -6, "hi": 6}},
        {"name": "b", "role": "input", "dims": rc, "passes": ["fwd", "bwd"], "dist": {"lo": -2, "hi": 2}},
        {"name": "dy", "role": "input", "dims": rc, "passes": ["bwd"], "dist": {"lo": -1, "hi": 1}},
        {"name": "y", "role": "output", "dims": rc, "passes": ["fwd"]},
        {"name": "da", "role": "output", "dims": rc, "passes": ["bwd"]},
        {"name": "db", "role": "output", "dims": rc, "passes": ["bwd"]},
    ],
    "passes": {
        "fwd": {"bytes": "3 * rows * cols * s", "flops": "5 * rows * cols"},
        "fwd+bwd": {"bytes": "6 * rows * cols * s", "flops": "16 * rows * cols"},
    },
    "tolerance": {"fp32": {"rtol": 1e-5, "atol": 1e-5},
                  "fp16": {"rtol": 1e-2, "atol": 1e-2},
                  "bf16": {"rtol": 2e-2, "atol": 2e-2}},
    "reference": reference,
}
