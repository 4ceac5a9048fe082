"""CPU tests of the operation files with typed tensors (operations/cross_entropy_targets.py,
fp8_gemm.py, fp8_quant.py, embedding.py; docs/operations.md): each float64 reference against
hand-computed values and independent expressions (finite differences for the backward), each
bytes and FLOPs formula against a hand count, planted bugs in a copy of each reference that these
same checks must catch, and the numpy arms (kernels/python/typed_numpy.py) against the references
(the fp8 ones where ml_dtypes is installed).
Run: /usr/bin/python3 tests/python/test_typed_ops.py   (numpy needed)
Prints `N passed, N failed`; exit 1 on a failure."""
import importlib.util
import math
import os
import re
import sys
import types
from fractions import Fraction

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
results = {"passed": 0, "failed": 0}


def check(cond, what):
    if cond:
        results["passed"] += 1
        print(f"ok - {what}")
    else:
        results["failed"] += 1
        print(f"FAIL - {what}")


def load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def formula(text, env):
    """The formula language of docs/operations.md, evaluated independently of prereg's parser."""
    src = re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lambda m: f"F({env[m.group(0)]})", text)
    src = re.sub(r"\b(\d+)\b(?!\))", r"F(\1)", src)
    v = eval(src, {"F": Fraction})  # noqa: S307 (our own files)
    assert v.denominator == 1, f"{text} does not divide exactly at {env}"
    return int(v)


def call(ref, pass_, axes, **tensors):
    """The reference called as prereg calls it: float64 floats, int64 integers."""
    t = types.SimpleNamespace(pass_=pass_, device="cpu", axes=dict(axes), eps=0.0)
    for k, v in tensors.items():
        a = np.asarray(v)
        setattr(t, k, a.astype(np.int64) if a.dtype.kind in "iu" else a.astype(np.float64))
    return ref(t)


def grad_fd(f, x, h=1e-6):
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp) - f(xm)) / (2 * h)
    return g


def close(a, b, tol=1e-6):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)


def e4m3_values():
    """Every finite e4m3 (fn) value, from the bits (independent of the files' rounding)."""
    out = set()
    for b in range(128):
        e, m = b >> 3, b & 7
        if e == 15 and m == 7:
            continue  # NaN
        v = m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
        out.update((v, -v))
    return np.array(sorted(out))


ops = {n: load(os.path.join(ROOT, "operations", n + ".py"))
       for n in ("cross_entropy_targets", "fp8_gemm", "fp8_quant", "embedding")}
arms = load(os.path.join(ROOT, "kernels", "python", "typed_numpy.py"))
try:
    import ml_dtypes  # noqa: F401
    HAVE_ML_DTYPES = True
except ImportError:
    HAVE_ML_DTYPES = False


# --- cross-entropy with real targets ------------------------------------------------------------


def ce_faults(ref):
    """What the checks of cross_entropy_targets find wrong with `ref` (empty: none)."""
    bad = []
    # rows 1, vocab 2, logits [0, ln 3], target 1: loss ln 4 - ln 3; dlogits [1/4, -1/4]
    r = call(ref, "fwd+bwd", {"rows": 1, "vocab": 2}, logits=[[0.0, math.log(3)]], targets=[1])
    if np.shape(r["loss"]) != () or abs(float(r["loss"]) - math.log(4 / 3)) > 1e-12:
        bad.append("loss by hand (a 0-dim number)")
    if not close(r["dlogits"], [[0.25, -0.25]]):
        bad.append("dlogits by hand")
    # target 0 of the same row: ln 4 - 0
    if abs(float(call(ref, "fwd", {"rows": 1, "vocab": 2}, logits=[[0.0, math.log(3)]],
                      targets=[0])["loss"]) - math.log(4)) > 1e-12:
        bad.append("the target is read")
    g = np.random.default_rng(3)
    ax = {"rows": 5, "vocab": 37}
    x = g.uniform(-8, 8, (5, 37)) + 30
    tgt = g.integers(0, 37, 5)
    r = call(ref, "fwd+bwd", ax, logits=x, targets=tgt)
    mean = lambda y: float(np.mean(np.log(np.exp(y - 30).sum(1)) + 30 - y[np.arange(5), tgt]))  # noqa
    if abs(float(r["loss"]) - mean(x)) > 1e-9:
        bad.append("loss = mean of log-sum-exp - logit[target]")
    if not close(r["dlogits"], grad_fd(mean, x)):
        bad.append("dlogits = d(mean loss) by finite differences")
    if "dlogits" in call(ref, "fwd", ax, logits=x, targets=tgt):
        bad.append("fwd gives the loss only")
    return bad


def test_cross_entropy_targets():
    mod = ops["cross_entropy_targets"]
    op = mod.cross_entropy_targets
    check(ce_faults(mod.reference) == [], "cross_entropy_targets: the reference passes its checks")

    def fixed_targets(t):  # the retired workaround: targets (7919 r + 13) mod vocab
        t.targets = (7919 * np.arange(t.axes["rows"]) + 13) % t.axes["vocab"]
        return mod.reference(t)

    def sum_not_mean(t):
        r = mod.reference(t)
        r["loss"] = r["loss"] * t.axes["rows"]
        return r

    def per_row_gradient(t):
        r = mod.reference(t)
        if "dlogits" in r:
            r["dlogits"] = r["dlogits"] * t.axes["rows"]
        return r
    for name, bug in (("fixed targets", fixed_targets), ("summed loss", sum_not_mean),
                      ("the gradient of the sum", per_row_gradient)):
        check(ce_faults(bug) != [], f"cross_entropy_targets: a planted bug ({name}) is caught: {ce_faults(bug)}")
    tensors = {d["name"]: d for d in op["tensors"]}
    check(tensors["targets"]["element"] == "int64" and tensors["targets"]["dist"] == {"int": [0, "vocab"]},
          "cross_entropy_targets: targets are int64 drawn in [0, vocab)")
    check(tensors["loss"]["dims"] == [] and tensors["loss"]["element"] == "fp32",
          "cross_entropy_targets: the loss is a 0-dim fp32 output")
    e = {"rows": 4096, "vocab": 151936, "s": 2, "s_targets": 8, "s_loss": 4}
    check(formula(op["passes"]["fwd"]["bytes"], e) == 4096 * 151936 * 2 + 4096 * 8 + 4,
          "cross_entropy_targets: fwd bytes = logits + targets (8 a row) + the loss (4)")
    check(formula(op["passes"]["fwd+bwd"]["bytes"], e) == 2 * 4096 * 151936 * 2 + 4096 * 8 + 4,
          "cross_entropy_targets: fwd+bwd bytes = logits read, dlogits written, targets, loss")
    check(formula(op["passes"]["fwd"]["flops"], e) == 4 * 4096 * 151936
          and formula(op["passes"]["fwd+bwd"]["flops"], e) == 7 * 4096 * 151936,
          "cross_entropy_targets: flops 4 and 7 a logit")
    ax = {"rows": 6, "vocab": 11}
    g = np.random.default_rng(4)
    x = g.uniform(-8, 8, (6, 11)).astype(np.float32)
    tgt = g.integers(0, 11, 6)
    r = call(mod.reference, "fwd+bwd", ax, logits=x, targets=tgt)
    t = types.SimpleNamespace(pass_="fwd+bwd", axes=ax, logits=x, targets=tgt,
                              loss=np.zeros((), np.float32), dlogits=np.zeros((6, 11), np.float32))
    arms.cross_entropy_targets(t)()
    check(close(t.loss, r["loss"], 1e-4) and close(t.dlogits, r["dlogits"], 1e-4),
          "cross_entropy_targets: the numpy arm matches")


# --- FP8 GEMM --------------------------------------------------------------------------------------


def gemm_faults(ref):
    bad = []
    # a [1, 2] = [1, 2], b [1, 2] = [3, 4]: a b^T = 11; scales 0.5 and 0.25: c = 1.375
    r = call(ref, "fwd", {"m": 1, "n": 1, "k": 2}, a=[[1.0, 2.0]], b=[[3.0, 4.0]],
             scale_a=0.5, scale_b=0.25)
    if not close(r["c"], [[1.375]], 1e-12):
        bad.append("c by hand")
    g = np.random.default_rng(5)
    vals = e4m3_values()
    a, b = g.choice(vals, (3, 5)), g.choice(vals, (4, 5))
    r = call(ref, "fwd", {"m": 3, "n": 4, "k": 5}, a=a, b=b, scale_a=0.002, scale_b=0.003)
    if not close(r["c"], np.einsum("mk,nk->mn", a, b) * 0.002 * 0.003, 1e-12):
        bad.append("c = scale_a scale_b a b^T (einsum)")
    return bad


def test_fp8_gemm():
    mod = ops["fp8_gemm"]
    op = mod.fp8_gemm
    check(gemm_faults(mod.reference) == [], "fp8_gemm: the reference passes its checks")

    def one_scale(t):
        return {"c": (t.a @ t.b.T) * float(t.scale_a)}

    def not_transposed(t):
        return {"c": (t.a @ t.b.reshape(t.b.shape[1], t.b.shape[0])) * float(t.scale_a) * float(t.scale_b)}
    for name, bug in (("scale_b dropped", one_scale), ("b read as [k, n]", not_transposed)):
        check(gemm_faults(bug) != [], f"fp8_gemm: a planted bug ({name}) is caught")
    tensors = {d["name"]: d for d in op["tensors"]}
    check(tensors["a"]["element"] == "fp8_e4m3" and tensors["b"]["dims"] == ["n", "k"]
          and tensors["scale_a"]["dims"] == [] and "element" not in tensors["c"],
          "fp8_gemm: e4m3 a [m, k], b [n, k], 0-dim fp32 scales, c in the protocol's dtype")
    e = {"m": 8192, "n": 8192, "k": 8192, "s": 2, "s_a": 1, "s_b": 1, "s_scale_a": 4, "s_scale_b": 4}
    check(formula(op["passes"]["fwd"]["bytes"], e) == 2 * 8192 * 8192 + 8 + 8192 * 8192 * 2,
          "fp8_gemm: bytes = a, b (1 byte) + scales + c (bf16)")
    check(formula(op["passes"]["fwd"]["flops"], e) == 2 * 8192 ** 3, "fp8_gemm: flops 2 m n k")
    if not HAVE_ML_DTYPES:
        print("# fp8_gemm: the numpy arm needs ml_dtypes (not installed): not run")
        return
    import ml_dtypes
    g = np.random.default_rng(6)
    a = g.choice(e4m3_values(), (4, 16)).astype(ml_dtypes.float8_e4m3fn)
    b = g.choice(e4m3_values(), (3, 16)).astype(ml_dtypes.float8_e4m3fn)
    sa, sb = np.array(0.002, np.float32), np.array(0.003, np.float32)
    r = call(mod.reference, "fwd", {"m": 4, "n": 3, "k": 16}, a=a.astype(np.float64),
             b=b.astype(np.float64), scale_a=sa, scale_b=sb)
    t = types.SimpleNamespace(a=a, b=b, scale_a=sa, scale_b=sb, c=np.zeros((4, 3), np.float32))
    arms.fp8_gemm(t)()
    check(close(t.c, r["c"], 1e-4), "fp8_gemm: the numpy arm matches")


# --- row-wise fp8 quantisation -----------------------------------------------------------------------


def quant_faults(ref):
    bad = []
    # amax 4: scale 4/448; q = x / scale = 112, -224, 448 (e4m3 values)
    r = call(ref, "fwd", {"rows": 1, "cols": 3}, x=[[1.0, -2.0, 4.0]])
    if not close(r["scale"], [np.float32(4 / 448)], 1e-12) or not close(r["q"], [[112, -224, 448]], 1e-6):
        bad.append("q and scale by hand")
    # 0.3 * 448 = 134.4 rounds to 128 (e4m3 steps 16 in [128, 256)); 0.42 * 448 = 188.16 to 192
    r = call(ref, "fwd", {"rows": 1, "cols": 3}, x=[[0.3, 1.0, 0.42]])
    if not close(r["q"], [[128, 448, 192]], 1e-6):
        bad.append("q rounded to e4m3 by hand")
    # rows of different maxima keep their own scales
    r = call(ref, "fwd", {"rows": 2, "cols": 2}, x=[[1.0, 0.5], [-8.0, 2.0]])
    if not close(r["scale"], np.float32([1 / 448, 8 / 448]).astype(np.float64), 1e-12) or \
            not close(r["q"], [[448, 224], [-448, 112]], 1e-6):
        bad.append("a scale per row")
    g = np.random.default_rng(7)
    x = g.uniform(-3, 3, (5, 40))
    r = call(ref, "fwd", {"rows": 5, "cols": 40}, x=x)
    vals = e4m3_values()
    scale = (np.abs(x).max(1) / 448).astype(np.float32).astype(np.float64)
    want = x / scale[:, None]
    nearest = vals[np.abs(want[..., None] - vals).argmin(-1)]  # no ties among these draws
    if not close(r["q"], nearest, 1e-12):
        bad.append("q = the nearest e4m3 value (an independent table)")
    return bad


def test_fp8_quant():
    mod = ops["fp8_quant"]
    op = mod.quant_fp8_rowwise
    check(quant_faults(mod.reference) == [], "quant_fp8_rowwise: the reference passes its checks")

    def one_scale(t):
        x = t.x
        scale = np.full(x.shape[0], np.float32(np.abs(x).max() / 448), np.float64)
        return {"q": mod._e4m3(x / scale[:, None], np), "scale": scale}

    def truncating(t):
        r = mod.reference(t)
        scale = r["scale"]
        v = t.x / scale[:, None]
        _, e = np.frexp(v)
        q = 2.0 ** (np.clip(e - 1, -6, None) - 3)
        r["q"] = np.trunc(v / q) * q
        return r
    for name, bug in (("one scale for the tensor", one_scale), ("truncation, not rounding", truncating)):
        check(quant_faults(bug) != [], f"quant_fp8_rowwise: a planted bug ({name}) is caught")
    tensors = {d["name"]: d for d in op["tensors"]}
    check(tensors["q"]["element"] == "fp8_e4m3" and "fp8_e4m3" in op["tolerance"],
          "quant_fp8_rowwise: q is e4m3 with its own tolerance")
    e = {"rows": 8192, "cols": 4864, "s": 2, "s_q": 1, "s_scale": 4}
    check(formula(op["passes"]["fwd"]["bytes"], e) == 8192 * 4864 * 3 + 8192 * 4,
          "quant_fp8_rowwise: bytes = x (bf16) + q (1 byte) + scale (4 a row)")
    check(formula(op["passes"]["fwd"]["flops"], e) == 3 * 8192 * 4864, "quant_fp8_rowwise: flops 3 an element")
    if not HAVE_ML_DTYPES:
        print("# quant_fp8_rowwise: the numpy arm needs ml_dtypes (not installed): not run")
        return
    import ml_dtypes
    x = np.random.default_rng(8).uniform(-3, 3, (4, 32)).astype(np.float32)
    r = call(mod.reference, "fwd", {"rows": 4, "cols": 32}, x=x)
    t = types.SimpleNamespace(x=x, q=np.zeros((4, 32), ml_dtypes.float8_e4m3fn), scale=np.zeros(4, np.float32))
    arms.quant_fp8_rowwise(t)()
    check(close(t.scale, r["scale"], 1e-7) and np.abs(t.q.astype(np.float64) - r["q"]).max() <= 0.0715 * 448,
          "quant_fp8_rowwise: the numpy arm matches within the file's tolerance")


# --- embedding -------------------------------------------------------------------------------------


def embedding_faults(ref):
    bad = []
    r = call(ref, "fwd", {"tokens": 3, "vocab": 3, "dim": 2}, table=[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
             ids=[2, 0, 2])
    if not close(r["y"], [[5, 6], [1, 2], [5, 6]], 0):
        bad.append("y by hand")
    return bad


def test_embedding():
    mod = ops["embedding"]
    op = mod.embedding
    check(embedding_faults(mod.reference) == [], "embedding: the reference passes its checks")

    def off_by_one(t):
        return {"y": t.table[(t.ids + 1) % t.table.shape[0]]}
    check(embedding_faults(off_by_one) != [], "embedding: a planted bug (ids + 1) is caught")
    tensors = {d["name"]: d for d in op["tensors"]}
    check(tensors["ids"]["dist"] == {"index_of": ["table", "vocab"]}, "embedding: ids index the table's rows")
    e = {"tokens": 8192, "vocab": 151936, "dim": 896, "s": 2, "s_ids": 8}
    check(formula(op["passes"]["fwd"]["bytes"], e) == 2 * 8192 * 896 * 2 + 8192 * 8,
          "embedding: bytes = rows read + y written + ids")
    g = np.random.default_rng(9)
    table = g.uniform(-1, 1, (7, 3)).astype(np.float32)
    ids = g.integers(0, 7, 5)
    r = call(mod.reference, "fwd", {"tokens": 5, "vocab": 7, "dim": 3}, table=table, ids=ids)
    t = types.SimpleNamespace(table=table, ids=ids, y=np.zeros((5, 3), np.float32))
    arms.embedding(t)()
    check(close(t.y, r["y"], 0), "embedding: the numpy arm matches exactly")


for test in (test_cross_entropy_targets, test_fp8_gemm, test_fp8_quant, test_embedding):
    try:
        test()
    except Exception as e:  # noqa: BLE001
        check(False, f"{test.__name__} raised {type(e).__name__}: {e}")
print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
