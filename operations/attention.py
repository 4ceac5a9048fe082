# Scaled dot-product attention as an operation file (docs/operations.md, "The LLM step's
# operations"), two declarations: `attention` (no mask) and `attention_causal`.
#
#   q [batch, heads, seq_q, head_dim], k and v [batch, kv_heads, seq_k, head_dim],
#   o = softmax(q kᵀ / sqrt(head_dim) + mask) v                 [batch, heads, seq_q, head_dim]
#
# GQA: query head h reads kv head h // (heads / kv_heads); heads must be a multiple of kv_heads.
# Causal is aligned bottom-right (FlashAttention >= 2.1, a KV cache): query i sees key j when
# j <= i + seq_k - seq_q, so a decode step (seq_q = 1) sees the whole cache and seq_q = seq_k is
# the usual lower triangle. attention_causal needs seq_q <= seq_k.
# fwd+bwd: from do (the gradient of o) the gradients dq, dk, dv (dk, dv summed over the query
# heads that share a kv head).
#
# bytes (minimum traffic: each tensor once): fwd reads q, k, v and writes o; fwd+bwd also reads
# do and writes dq, dk, dv (o is written once and read back by the backward: counted once).
# flops, as FlashAttention counts them: the forward is two GEMMs over the unmasked (query, key)
# pairs, 4 * head_dim flops a pair; the backward 2.5x the forward (five GEMMs: q kᵀ recomputed,
# dv, dp, dq, dk), so fwd+bwd is 3.5x = 14 * head_dim flops a pair. Unmasked pairs per (batch,
# head): seq_q * seq_k without a mask; causal exactly seq_q * seq_k - seq_q * (seq_q - 1) / 2
# (for seq_q = seq_k = n that is n (n + 1) / 2, not FlashAttention's n^2 / 2).
# The reference is float64 (numpy on the CPU, torch on the GPU, one batch at a time).


def _mask(sq, sk, causal, xp, like):
    """True where query i may not see key j (on `like`'s device under torch)."""
    if not causal:
        return None
    where = {} if xp.__name__ == "numpy" else {"device": like.device}
    i = xp.arange(sq, **where).reshape(sq, 1)
    j = xp.arange(sk, **where).reshape(1, sk)
    return j > i + (sk - sq)


def _one_batch(q, k, v, do, causal, xp, lib):
    """Float64 o (and dq, dk, dv) of one batch: q [h, sq, d], k, v [kvh, sk, d]."""
    h, sq, d = q.shape
    kvh, sk = k.shape[0], k.shape[1]
    if h % kvh != 0:
        raise ValueError(f"heads {h} is not a multiple of kv_heads {kvh}")
    if causal and sq > sk:
        raise ValueError(f"causal attention needs seq_q <= seq_k (seq_q {sq}, seq_k {sk})")
    g = h // kvh
    kx = lib.repeat(k, g)  # [h, sk, d]: query head i reads kv head i // g
    vx = lib.repeat(v, g)
    scale = 1.0 / d ** 0.5
    s = (q @ lib.t(kx)) * scale
    m = _mask(sq, sk, causal, xp, s)
    if m is not None:
        s = lib.where(m, float("-inf"), s)
    s = s - lib.rowmax(s)
    p = xp.exp(s)
    p = p / p.sum(-1, keepdims=True)
    o = p @ vx
    if do is None:
        return o, None, None, None
    dv = lib.t(p) @ do
    dp = do @ lib.t(vx)
    ds = p * (dp - (do * o).sum(-1, keepdims=True))
    dq = (ds @ kx) * scale
    dk = (lib.t(ds) @ q) * scale
    return o, dq, lib.group_sum(dk, kvh, g), lib.group_sum(dv, kvh, g)


class _Numpy:
    def __init__(self, np):
        self.np = np

    def repeat(self, x, g):
        return self.np.repeat(x, g, axis=0)

    def t(self, x):
        return self.np.swapaxes(x, -1, -2)

    def where(self, m, val, s):
        return self.np.where(m, val, s)

    def rowmax(self, s):
        return s.max(-1, keepdims=True)

    def group_sum(self, x, kvh, g):
        return x.reshape(kvh, g, *x.shape[1:]).sum(1)


class _Torch(_Numpy):
    def repeat(self, x, g):
        return self.np.repeat_interleave(x, g, dim=0)

    def t(self, x):
        return x.transpose(-1, -2)

    def where(self, m, val, s):
        return s.masked_fill(m, val)

    def rowmax(self, s):
        return s.amax(-1, keepdim=True)


def _on_device(t, torch):
    """Input by name as a float64 tensor on the GPU: prereg's own copy there (t.on_device, no
    trip through the host) or, with a prereg that has none, the numpy copy moved there."""
    ond = getattr(t, "on_device", None)
    if ond is not None:
        return lambda n: getattr(ond, n)
    return lambda n: torch.from_numpy(getattr(t, n)).to("cuda", torch.float64)


def reference(t):
    """float64 o; for fwd+bwd also dq, dk, dv."""
    causal = t.operation == "attention_causal"
    bwd = t.pass_ == "fwd+bwd"
    if t.device == "cuda":
        import torch
        xp, lib = torch, _Torch(torch)
        dev = _on_device(t, torch)
        empty = lambda like: torch.empty(like.shape, dtype=torch.float64, device=like.device)  # noqa
    else:
        import numpy as np
        xp, lib = np, _Numpy(np)
        dev = lambda n: getattr(t, n)  # noqa: E731
        empty = lambda like: np.empty(like.shape)  # noqa: E731
    q, k, v = dev("q"), dev("k"), dev("v")
    do = dev("do") if bwd else None
    out = {"o": empty(q)}
    if bwd:
        out.update(dq=empty(q), dk=empty(k), dv=empty(v))
    for b in range(q.shape[0]):
        o, dq, dk, dv = _one_batch(q[b], k[b], v[b], do[b] if bwd else None, causal, xp, lib)
        out["o"][b] = o
        if bwd:
            out["dq"][b], out["dk"][b], out["dv"][b] = dq, dk, dv
    return out


_AXES = ["batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim"]
_Q = ["batch", "heads", "seq_q", "head_dim"]
_KV = ["batch", "kv_heads", "seq_k", "head_dim"]
_TENSORS = [
    # q wider than k so that the scores spread (std about 1 after the scale at any head_dim)
    {"name": "q", "role": "input", "dims": _Q, "passes": ["fwd", "bwd"], "dist": {"lo": -3, "hi": 3}},
    {"name": "k", "role": "input", "dims": _KV, "passes": ["fwd", "bwd"], "dist": {"lo": -1, "hi": 1}},
    {"name": "v", "role": "input", "dims": _KV, "passes": ["fwd", "bwd"], "dist": {"lo": -1, "hi": 1}},
    {"name": "do", "role": "input", "dims": _Q, "passes": ["bwd"], "dist": {"lo": -1, "hi": 1}},
    {"name": "o", "role": "output", "dims": _Q, "passes": ["fwd", "bwd"]},
    {"name": "dq", "role": "output", "dims": _Q, "passes": ["bwd"]},
    {"name": "dk", "role": "output", "dims": _KV, "passes": ["bwd"]},
    {"name": "dv", "role": "output", "dims": _KV, "passes": ["bwd"]},
]
_FWD_BYTES = "(2 * batch * heads * seq_q * head_dim + 2 * batch * kv_heads * seq_k * head_dim) * s"
_BWD_BYTES = "(4 * batch * heads * seq_q * head_dim + 4 * batch * kv_heads * seq_k * head_dim) * s"
# Set before any pilot. o is about 0.015 in magnitude at seq_k = 4096 (scores of std 1 spread the
# weights) and dq about 1e-3, so bf16's atol 2e-3 leaves dq's check weak at prefill sizes: the
# pilot's correctness records give each arm's largest error; tighten before freezing.
_TOLERANCE = {"fp32": {"rtol": 1e-4, "atol": 1e-4},
              "fp16": {"rtol": 2e-2, "atol": 1e-3},
              "bf16": {"rtol": 3e-2, "atol": 2e-3}}
_PAIRS_CAUSAL = "(seq_q * seq_k - seq_q * (seq_q - 1) / 2)"

attention = {
    "summary": "o = softmax(q kᵀ / sqrt(d)) v with GQA; backward dq, dk, dv",
    "axes": _AXES,
    "tensors": _TENSORS,
    "passes": {
        "fwd": {"bytes": _FWD_BYTES, "flops": "4 * batch * heads * head_dim * seq_q * seq_k"},
        "fwd+bwd": {"bytes": _BWD_BYTES, "flops": "14 * batch * heads * head_dim * seq_q * seq_k"},
    },
    "tolerance": _TOLERANCE,
    "reference": reference,
}

attention_causal = {
    "summary": "causal (bottom-right) o = softmax(q kᵀ / sqrt(d) + mask) v with GQA; backward dq, dk, dv",
    "axes": _AXES,
    "tensors": _TENSORS,
    "passes": {
        "fwd": {"bytes": _FWD_BYTES, "flops": "4 * batch * heads * head_dim * " + _PAIRS_CAUSAL},
        "fwd+bwd": {"bytes": _BWD_BYTES, "flops": "14 * batch * heads * head_dim * " + _PAIRS_CAUSAL},
    },
    "tolerance": _TOLERANCE,
    "reference": reference,
}
