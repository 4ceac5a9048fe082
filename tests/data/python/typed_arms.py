# numpy arms of tests/data/operations/typed_probe.py and planted faults of the typed operations
# (tests/e2e/typed_ops.sh): each fault must fail the correctness gate with its own reason.
import numpy as np


def probe(t):
    """Every output from its input, exactly; total and norm computed."""
    def step():
        for a, o in (("a_i8", "o_i8"), ("a_u8", "o_u8"), ("a_i32", "o_i32"), ("a_i64", "o_i64"),
                     ("a_b", "o_b"), ("f4", "o_f4"), ("f5", "o_f5")):
            if getattr(t, a, None) is not None:
                getattr(t, o)[...] = getattr(t, a)
        t.total[...] = t.a_i32.sum(dtype=np.int64)
        t.norm[...] = np.sqrt((t.x.astype(np.float32) ** 2).sum(dtype=np.float32))
    return step


def probe_unwritten(t):
    """Leaves the 0-dim count unwritten (still the poison): an `unwritten` failure."""
    inner = probe(t)

    def step():
        saved = t.total.copy()
        inner()
        t.total[...] = saved
    return step


def probe_wrong_bool(t):
    """Writes every bool output as true."""
    inner = probe(t)

    def step():
        inner()
        t.o_b[...] = True
    return step


def ce_fixed_targets(t):
    """The retired workaround: targets (7919 r + 13) mod vocab, not t.targets."""
    rows, vocab = t.axes["rows"], t.axes["vocab"]
    r = np.arange(rows)
    tgt = (7919 * r + 13) % vocab

    def step():
        x = t.logits.astype(np.float32)
        m = x.max(-1, keepdims=True)
        e = np.exp(x - m)
        lse = np.log(e.sum(-1)) + m[:, 0]
        t.loss[...] = (lse - x[r, tgt]).mean()
        if t.pass_ == "fwd+bwd":
            g = e / e.sum(-1, keepdims=True)
            g[r, tgt] -= 1.0
            t.dlogits[...] = g / rows
    return step


def embedding_off_by_one(t):
    """Gathers row ids + 1."""
    def step():
        t.y[...] = t.table[(t.ids + 1) % t.table.shape[0]]
    return step
