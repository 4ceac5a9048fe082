# Row-wise FP8 quantisation with its scales (docs/operations.md, "The LLM step's operations"): what
# an FP8 linear layer does to its activations before the GEMM (torchao's float8 "rowwise",
# DeepSeek-V3's per-token scaling).
#
#   scale[r] = fp32(max_c |x[r, c]| / 448)                 (fp32, [rows]: the dequantisation scale)
#   q[r, c]  = e4m3(x[r, c] / scale[r])                    (fp8 e4m3, rounded to nearest, ties even)
#
# x is the protocol's dtype. The scale is declared fp32 (the division by 448 rounded to fp32, as an
# fp32 kernel computes it) and q is computed from that fp32 scale, the quotient rounded once to
# e4m3. x carries a per-row offset, so rows have different maxima (a kernel that takes one scale
# for the whole tensor fails).
#
# bytes (minimum traffic): x read once, q (1 byte) and scale (4 bytes a row) written once.
# flops, a convention: 3 an element (the absolute maximum, the division, the rounding).

E4M3_MAX = 448.0


def _e4m3(v, xp):
    """float64 v rounded to e4m3 (fn) values, to nearest, ties to even (|v| <= 464 here)."""
    _, e = xp.frexp(v)  # v = f 2^e, 0.5 <= |f| < 1: the binade's exponent is e - 1
    q = 2.0 ** (xp.clip(e - 1, -6, None) - 3)  # e4m3: 3 mantissa bits, smallest normal 2^-6
    return xp.round(v / q) * q  # round: half to even in numpy and torch


def _on_device(t, torch):
    """Input by name as a tensor on the GPU (float64, or int64 for an integer input): prereg's own
    copy there (t.on_device, no trip through the host) or the numpy copy moved there."""
    ond = getattr(t, "on_device", None)
    if ond is not None:
        return lambda n: getattr(ond, n)
    return lambda n: torch.from_numpy(getattr(t, n)).to("cuda")


def reference(t):
    """float64 q [rows, cols] (e4m3 values) and scale [rows] (fp32 values)."""
    if t.device == "cuda":
        import torch as xp
        x = _on_device(t, xp)("x")
        amax = x.abs().amax(-1)
        scale = (amax / E4M3_MAX).to(xp.float32).to(xp.float64)
    else:
        import numpy as xp
        x = t.x
        amax = xp.abs(x).max(-1)
        scale = (amax / E4M3_MAX).astype(xp.float32).astype(xp.float64)
    return {"q": _e4m3(x / scale[:, None], xp), "scale": scale}


quant_fp8_rowwise = {
    "summary": "row-wise fp8 e4m3 quantisation: scale = amax(|x[r]|) / 448 (fp32), "
               "q = e4m3(x / scale)",
    "axes": ["rows", "cols"],
    "tensors": [
        {"name": "x", "role": "input", "dims": ["rows", "cols"], "passes": ["fwd"],
         "dist": {"lo": -2, "hi": 2, "row_offset": 3}},
        {"name": "q", "role": "output", "dims": ["rows", "cols"], "element": "fp8_e4m3",
         "passes": ["fwd"]},
        {"name": "scale", "role": "output", "dims": ["rows"], "element": "fp32", "passes": ["fwd"]},
    ],
    "passes": {
        "fwd": {"bytes": "rows * cols * s + rows * cols * s_q + rows * s_scale",
                "flops": "3 * rows * cols"},
    },
    # q: a quotient computed otherwise (a reciprocal multiplied, Triton's approximate division)
    # can land on the other side of a rounding tie: one e4m3 step, 32 at the top binade, is
    # 1/14 of the largest |q| (448). scale: the protocol's dtype's tolerance.
    "tolerance": {"fp8_e4m3": {"rtol": 0.0715, "atol": 0},
                  "fp32": {"rtol": 1e-6, "atol": 0},
                  "bf16": {"rtol": 1e-6, "atol": 0}},
    "reference": reference,
}
