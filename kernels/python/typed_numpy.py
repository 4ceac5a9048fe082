# numpy arms of the operations with typed tensors (operations/cross_entropy_targets.py,
# embedding.py, fp8_gemm.py, fp8_quant.py; docs/operations.md), for CPU protocols and CI
# (tests/e2e/typed_ops.sh). Each computes the way a straightforward numpy program would, in
# float32. int64 tensors are numpy int64 arrays; fp8 tensors are ml_dtypes' float8_e4m3fn arrays
# (prereg refuses them at `check` where ml_dtypes is not installed: docs/python-arms.md).
import numpy as np


def cross_entropy_targets(t):
    """The mean loss over the rows (0-dim fp32) against t.targets; fwd+bwd: its gradient."""
    rows = t.axes["rows"]
    r = np.arange(rows)

    def step():
        x = t.logits.astype(np.float32)
        m = x.max(-1, keepdims=True)
        e = np.exp(x - m)
        ssum = e.sum(-1, keepdims=True)
        losses = (np.log(ssum) + m)[:, 0] - x[r, t.targets]
        t.loss[...] = losses.sum(dtype=np.float32) / np.float32(rows)
        if t.pass_ == "fwd+bwd":
            g = e / ssum
            g[r, t.targets] -= 1.0
            t.dlogits[...] = g / rows

    return step


def embedding(t):
    """y = table[ids], a gather of whole rows."""
    def step():
        np.take(t.table, t.ids, axis=0, out=t.y)

    return step


def fp8_gemm(t):
    """c = (a scale_a) (b scale_b)^T with the fp8 operands widened to float32."""
    def step():
        a = t.a.astype(np.float32)
        b = t.b.astype(np.float32)
        t.c[...] = (a @ b.T) * (np.float32(t.scale_a) * np.float32(t.scale_b))

    return step


def quant_fp8_rowwise(t):
    """scale = amax(|x[r]|) / 448 in float32; q = x / scale cast to e4m3 (ml_dtypes rounds to
    nearest even)."""
    def step():
        x = t.x.astype(np.float32)
        scale = np.abs(x).max(-1) / np.float32(448.0)
        t.scale[...] = scale
        t.q[...] = (x / scale[:, None]).astype(t.q.dtype)

    return step
