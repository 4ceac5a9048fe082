# The LLM step's GEMM as an operation file (docs/operations.md, "The LLM step's operations"):
# C = A·B with A [m, k], B [k, n], C [m, n], row-major; the backward of C's gradient dc gives
# da = dc·Bᵀ [m, k] and db = Aᵀ·dc [k, n]. fp16/bf16 arms accumulate in fp32 (cuBLAS does).
# The reference is float64: numpy on the CPU, torch float64 on the GPU (imported inside it, so
# the declaration reads with any Python). No bias/activation epilogue (issue 34 lists it as
# optional; not declared here).
#
# bytes (minimum traffic: each tensor the pass touches moved once): fwd reads A and B and writes
# C; fwd+bwd reads A, B and dc and writes C, da and db.
# flops: 2mnk for the forward (a multiply and an add per term); the backward is two more GEMMs
# of the same size, 4mnk, so fwd+bwd is 6mnk.


def _on_device(t, torch):
    """Input by name as a float64 tensor on the GPU: prereg's own copy there (t.on_device, no
    trip through the host) or, with a prereg that has none, the numpy copy moved there."""
    ond = getattr(t, "on_device", None)
    if ond is not None:
        return lambda n: getattr(ond, n)
    return lambda n: torch.from_numpy(getattr(t, n)).to("cuda", torch.float64)


def reference(t):
    """float64 c; for fwd+bwd also da, db."""
    if t.device == "cuda":
        import torch
        dev = _on_device(t, torch)
        a, b = dev("a"), dev("b")
        out = {"c": a @ b}
        if t.pass_ == "fwd+bwd":
            dc = dev("dc")
            out["da"] = dc @ b.T
            out["db"] = a.T @ dc
        return out
    out = {"c": t.a @ t.b}
    if t.pass_ == "fwd+bwd":
        out["da"] = t.dc @ t.b.T
        out["db"] = t.a.T @ t.dc
    return out


matmul = {
    "summary": "C = A·B (A [m, k], B [k, n]); backward da = dc·Bᵀ, db = Aᵀ·dc",
    "axes": ["m", "n", "k"],
    "tensors": [
        {"name": "a", "role": "input", "dims": ["m", "k"], "passes": ["fwd", "bwd"],
         "dist": {"lo": -1, "hi": 1}},
        {"name": "b", "role": "input", "dims": ["k", "n"], "passes": ["fwd", "bwd"],
         "dist": {"lo": -1, "hi": 1}},
        {"name": "dc", "role": "input", "dims": ["m", "n"], "passes": ["bwd"],
         "dist": {"lo": -1, "hi": 1}},
        {"name": "c", "role": "output", "dims": ["m", "n"], "passes": ["fwd"]},
        {"name": "da", "role": "output", "dims": ["m", "k"], "passes": ["bwd"]},
        {"name": "db", "role": "output", "dims": ["k", "n"], "passes": ["bwd"]},
    ],
    "passes": {
        "fwd": {"bytes": "(m * k + k * n + m * n) * s", "flops": "2 * m * n * k"},
        "fwd+bwd": {"bytes": "2 * (m * k + k * n + m * n) * s", "flops": "6 * m * n * k"},
    },
    # |c| grows like sqrt(k) / 3 for U(-1, 1) inputs; the half-precision outputs carry one
    # rounding (2^-9 relative for bf16) plus fp32 accumulation error.
    "tolerance": {"fp32": {"rtol": 1e-4, "atol": 1e-4},
                  "fp16": {"rtol": 1e-2, "atol": 1e-2},
                  "bf16": {"rtol": 2e-2, "atol": 2e-2}},
    "reference": reference,
}
