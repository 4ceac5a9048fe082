# numpy arms of the LLM step's operations (operations/*.py), for CPU protocols and CI
# (tests/e2e/llm_ops.sh): each computes in the protocol's dtype (numpy float32 for fp32; float16
# arrays are computed in float32 and written back) the way a straightforward numpy program
# would. t carries the operation's tensors by their declared names and dims, t.axes the extents.
import numpy as np


def _targets(rows, vocab):
    """operations/cross_entropy.py's targets: (7919 r + 13) mod vocab, int64."""
    return (7919 * np.arange(rows, dtype=np.int64) + 13) % vocab


def matmul(t):
    def fwd():
        np.matmul(t.a, t.b, out=t.c)

    def fwd_bwd():
        np.matmul(t.a, t.b, out=t.c)
        np.matmul(t.dc, t.b.T, out=t.da)
        np.matmul(t.a.T, t.dc, out=t.db)

    return fwd if t.pass_ == "fwd" else fwd_bwd


def _attention(t, causal):
    hq, hk = t.axes["heads"], t.axes["kv_heads"]
    sq, sk, d = t.axes["seq_q"], t.axes["seq_k"], t.axes["head_dim"]
    g = hq // hk
    mask = (np.arange(sk)[None, :] > np.arange(sq)[:, None] + (sk - sq)) if causal else None
    scale = np.float32(1.0 / np.sqrt(d))

    def step():
        k = np.repeat(t.k, g, axis=1)
        v = np.repeat(t.v, g, axis=1)
        s = (t.q @ np.swapaxes(k, -1, -2)) * scale
        if mask is not None:
            s = np.where(mask, -np.inf, s)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        t.o[...] = p @ v
        if t.pass_ == "fwd":
            return
        dp = t.do @ np.swapaxes(v, -1, -2)
        ds = p * (dp - (t.do * t.o).sum(-1, keepdims=True))
        t.dq[...] = (ds @ k) * scale
        dk = (np.swapaxes(ds, -1, -2) @ t.q) * scale
        dv = np.swapaxes(p, -1, -2) @ t.do
        t.dk[...] = dk.reshape(dk.shape[0], hk, g, sk, d).sum(2)
        t.dv[...] = dv.reshape(dv.shape[0], hk, g, sk, d).sum(2)

    return step


def attention(t):
    return _attention(t, t.operation == "attention_causal")


def cross_entropy(t):
    rows, vocab = t.axes["rows"], t.axes["vocab"]
    tgt = _targets(rows, vocab)
    r = np.arange(rows)

    def step():
        x = t.logits.astype(np.float32)
        m = x.max(-1, keepdims=True)
        e = np.exp(x - m)
        ssum = e.sum(-1, keepdims=True)
        t.loss[...] = (np.log(ssum) + m)[:, 0] - x[r, tgt]
        if t.pass_ == "fwd+bwd":
            g = e / ssum
            g[r, tgt] -= 1.0
            t.dlogits[...] = g / rows

    return step


def rope(t):
    h = t.axes["head_dim"] // 2

    def rotate(x, c, s, out, sign):
        out[..., :h] = x[..., :h] * c - sign * x[..., h:] * s
        out[..., h:] = x[..., h:] * c + sign * x[..., :h] * s

    def step():
        c, s = t.cos[:, :h], t.sin[:, :h]
        rotate(t.q, c, s, t.q_out, 1)
        rotate(t.k, c, s, t.k_out, 1)
        if t.pass_ == "fwd+bwd":
            rotate(t.dq_out, c, s, t.dq, -1)
            rotate(t.dk_out, c, s, t.dk, -1)

    return step


def swiglu(t):
    def step():
        sig = 1.0 / (1.0 + np.exp(-t.a))
        silu = t.a * sig
        t.y[...] = silu * t.b
        if t.pass_ == "fwd+bwd":
            t.da[...] = t.dy * t.b * sig * (1 + t.a * (1 - sig))
            t.db[...] = t.dy * silu

    return step
