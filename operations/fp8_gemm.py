# An FP8 GEMM with per-tensor scales (docs/operations.md, "The LLM step's operations"): the
# linear layer of an FP8 training or inference step, as torch._scaled_mm and cuBLASLt compute it.
#
#   c[m, n] = scale_a * scale_b * sum_k a[m, k] * b[n, k]        (c = (a scale_a) (b scale_b)^T)
#
# a [m, k] and b [n, k] are fp8 e4m3 (the "fn" format: largest 448, no infinity), row-major: b is
# the weight as nn.Linear stores it ([out_features, in_features]), which is the layout the FP8
# tensor cores take (cuBLASLt's "TN": A transposed, B not, both K-major). scale_a and scale_b are
# 0-dim fp32 (one dequantisation scale a tensor). c is the protocol's dtype (bf16 on the GPU; the
# CPU tests use fp32). The inputs are drawn over e4m3's whole range, [-448, 448], and the scales
# in [1/2000, 1/250] (448 times a scale is then about 0.2 to 1.8, activations of unit scale).
#
# bytes (minimum traffic): a and b read once (1 byte an element), the two scales, c written once.
# flops: 2 m n k (a multiply and an add a product), the scaling not counted.


def _on_device(t, torch):
    """Input by name as a tensor on the GPU (float64, or int64 for an integer input): prereg's own
    copy there (t.on_device, no trip through the host) or the numpy copy moved there."""
    ond = getattr(t, "on_device", None)
    if ond is not None:
        return lambda n: getattr(ond, n)
    return lambda n: torch.from_numpy(getattr(t, n)).to("cuda")


def reference(t):
    """float64 c = (a scale_a) (b scale_b)^T."""
    if t.device == "cuda":
        import torch
        get = _on_device(t, torch)
        return {"c": (get("a") @ get("b").T) * (get("scale_a") * get("scale_b"))}
    return {"c": (t.a @ t.b.T) * (float(t.scale_a) * float(t.scale_b))}


fp8_gemm = {
    "summary": "c = scale_a scale_b a b^T: a [m, k], b [n, k] fp8 e4m3, 0-dim fp32 scales, "
               "c [m, n] in the protocol's dtype",
    "axes": ["m", "n", "k"],
    "tensors": [
        {"name": "a", "role": "input", "dims": ["m", "k"], "element": "fp8_e4m3",
         "passes": ["fwd"], "dist": {"lo": -448, "hi": 448}},
        {"name": "b", "role": "input", "dims": ["n", "k"], "element": "fp8_e4m3",
         "passes": ["fwd"], "dist": {"lo": -448, "hi": 448}},
        {"name": "scale_a", "role": "input", "dims": [], "element": "fp32", "passes": ["fwd"],
         "dist": {"lo": 0.0005, "hi": 0.004}},
        {"name": "scale_b", "role": "input", "dims": [], "element": "fp32", "passes": ["fwd"],
         "dist": {"lo": 0.0005, "hi": 0.004}},
        {"name": "c", "role": "output", "dims": ["m", "n"], "passes": ["fwd"]},
    ],
    "passes": {
        "fwd": {"bytes": "m * k * s_a + n * k * s_b + s_scale_a + s_scale_b + m * n * s",
                "flops": "2 * m * n * k"},
    },
    # The tensor cores accumulate fp8 products in fp32 (Hopper's FP8 MMA keeps fewer bits
    # between its K-chunks) and round c to bf16: relative to the largest |c|, 1e-2 (bf16) and
    # 1e-4 (fp32, numpy's float32 matmul on the CPU) hold a correct kernel and fail a wrong scale,
    # a transposed operand or a dropped K-chunk.
    "tolerance": {"fp32": {"rtol": 1e-4, "atol": 1e-6},
                  "bf16": {"rtol": 1e-2, "atol": 1e-6}},
    "reference": reference,
}
