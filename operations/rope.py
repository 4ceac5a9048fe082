# Rotary position embedding on q and k as an operation file (docs/operations.md, "The LLM step's
# operations"), the layout of Llama/Qwen2 in transformers and of Liger-Kernel:
#
#   q [batch, heads, seq, head_dim], k [batch, kv_heads, seq, head_dim], cos, sin [seq, head_dim]
#   with h = head_dim / 2, c = cos[:, :h], s = sin[:, :h] (per position), for x in q, k:
#   out[..., :h] = x[..., :h] * c - x[..., h:] * s
#   out[..., h:] = x[..., h:] * c + x[..., :h] * s
#
# The tables are stored at full head_dim as transformers builds them (cat(freqs, freqs): the
# second half repeats the first), and the operation reads the first half only, as Liger-Kernel's
# kernel and flash-attn's rotary do. prereg draws the tables at random, so the two halves differ:
# an arm that uses the full tables (transformers' q * cos + rotate_half(q) * sin) builds them
# from the first half (cat(c, c)) inside its step.
# fwd+bwd: from the gradients dq_out, dk_out the input gradients (the rotation by -angle):
#   dx[..., :h] = g[..., :h] * c + g[..., h:] * s,  dx[..., h:] = g[..., h:] * c - g[..., :h] * s
#
# bytes (minimum traffic, issue 34's table: q and k read and written; plus the two half tables
# read once, n * d * s, under 1 % at the shipped shapes): fwd reads q, k and writes q_out, k_out;
# fwd+bwd also reads dq_out, dk_out and writes dq, dk.
# flops: 3 per output element (two multiplies and an add), the same again for the backward.


def _rotate(x, c, s, sign, xp):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return xp.concatenate([x1 * c - sign * x2 * s, x2 * c + sign * x1 * s], -1) \
        if xp.__name__ == "numpy" else xp.cat([x1 * c - sign * x2 * s, x2 * c + sign * x1 * s], -1)


def _on_device(t, torch):
    """Input by name as a float64 tensor on the GPU: prereg's own copy there (t.on_device, no
    trip through the host) or, with a prereg that has none, the numpy copy moved there."""
    ond = getattr(t, "on_device", None)
    if ond is not None:
        return lambda n: getattr(ond, n)
    return lambda n: torch.from_numpy(getattr(t, n)).to("cuda", torch.float64)


def reference(t):
    """float64 q_out, k_out; for fwd+bwd also dq, dk."""
    if t.device == "cuda":
        import torch as xp
        dev = _on_device(t, xp)
    else:
        import numpy as xp
        dev = lambda n: getattr(t, n)  # noqa: E731
    h = t.axes["head_dim"] // 2
    c, s = dev("cos")[:, :h], dev("sin")[:, :h]
    q, k = dev("q"), dev("k")
    out = {"q_out": _rotate(q, c, s, 1.0, xp), "k_out": _rotate(k, c, s, 1.0, xp)}
    if t.pass_ == "fwd+bwd":
        out["dq"] = _rotate(dev("dq_out"), c, s, -1.0, xp)
        out["dk"] = _rotate(dev("dk_out"), c, s, -1.0, xp)
    return out


_Q = ["batch", "heads", "seq", "head_dim"]
_K = ["batch", "kv_heads", "seq", "head_dim"]
_T = ["seq", "head_dim"]
_QK = "(batch * heads + batch * kv_heads) * seq * head_dim"

rope = {
    "summary": "rotary embedding of q and k (GQA), half tables of [seq, head_dim] cos, sin; backward dq, dk",
    "axes": ["batch", "heads", "kv_heads", "seq", "head_dim"],
    "tensors": [
        {"name": "q", "role": "input", "dims": _Q, "passes": ["fwd"], "dist": {"lo": -2, "hi": 2}},
        {"name": "k", "role": "input", "dims": _K, "passes": ["fwd"], "dist": {"lo": -2, "hi": 2}},
        {"name": "cos", "role": "input", "dims": _T, "passes": ["fwd", "bwd"], "dist": {"lo": -1, "hi": 1}},
        {"name": "sin", "role": "input", "dims": _T, "passes": ["fwd", "bwd"], "dist": {"lo": -1, "hi": 1}},
        {"name": "dq_out", "role": "input", "dims": _Q, "passes": ["bwd"], "dist": {"lo": -1, "hi": 1}},
        {"name": "dk_out", "role": "input", "dims": _K, "passes": ["bwd"], "dist": {"lo": -1, "hi": 1}},
        {"name": "q_out", "role": "output", "dims": _Q, "passes": ["fwd"]},
        {"name": "k_out", "role": "output", "dims": _K, "passes": ["fwd"]},
        {"name": "dq", "role": "output", "dims": _Q, "passes": ["bwd"]},
        {"name": "dk", "role": "output", "dims": _K, "passes": ["bwd"]},
    ],
    "passes": {
        "fwd": {"bytes": "(2 * " + _QK + " + seq * head_dim) * s", "flops": "3 * " + _QK},
        "fwd+bwd": {"bytes": "(4 * " + _QK + " + seq * head_dim) * s", "flops": "6 * " + _QK},
    },
    "tolerance": {"fp32": {"rtol": 1e-5, "atol": 1e-5},
                  "fp16": {"rtol": 1e-2, "atol": 1e-2},
                  "bf16": {"rtol": 2e-2, "atol": 2e-2}},
    "reference": reference,
}
