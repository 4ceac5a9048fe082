"""CPU tests of the LLM step's operation files (operations/*.py; docs/operations.md, "The LLM
step's operations"): every float64 reference against hand-computed values and independent
numpy expressions (finite differences for every backward), every bytes and FLOPs formula
against a hand count, and the numpy arms (kernels/python/llm_numpy.py) against the references.
Run: /usr/bin/python3 tests/python/test_llm_ops.py   (numpy needed)
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
    """The formula language of docs/operations.md, evaluated independently of prereg's parser:
    integers, names, + - * / and parentheses; / must divide exactly."""
    src = re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lambda m: f"F({env[m.group(0)]})", text)
    src = re.sub(r"\b(\d+)\b(?!\))", r"F(\1)", src)
    v = eval(src, {"F": Fraction})  # noqa: S307 (our own files)
    assert v.denominator == 1, f"{text} does not divide exactly at {env}"
    return int(v)


def call(op, name, pass_, axes, **tensors):
    t = types.SimpleNamespace(pass_=pass_, device="cpu", operation=name, axes=dict(axes), eps=0.0)
    for d in op["tensors"]:
        setattr(t, d["name"], None)
    for k, v in tensors.items():
        setattr(t, k, np.asarray(v, dtype=np.float64))
    return op["reference"](t)


def draw(op, axes, seed):
    g = np.random.default_rng(seed)
    return {d["name"]: g.uniform(d["dist"]["lo"], d["dist"]["hi"], [axes[x] for x in d["dims"]])
            for d in op["tensors"] if d["role"] == "input"}


def grad_fd(f, x, h=1e-6):
    """Central finite differences of the scalar f at x (float64)."""
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
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)


ops = {n: load(os.path.join(ROOT, "operations", n + ".py"))
       for n in ("matmul", "attention", "cross_entropy", "rope", "swiglu")}
arms = load(os.path.join(ROOT, "kernels", "python", "llm_numpy.py"))


def test_matmul():
    op = ops["matmul"].matmul
    a = [[1, 2], [3, 4]]
    b = [[5, 6], [7, 8]]
    dc = [[1, 0], [0, 1]]
    r = call(op, "matmul", "fwd+bwd", {"m": 2, "n": 2, "k": 2}, a=a, b=b, dc=dc)
    check(np.array_equal(r["c"], [[19, 22], [43, 50]]), "matmul: C = A·B by hand")
    check(np.array_equal(r["da"], [[5, 7], [6, 8]]) and np.array_equal(r["db"], [[1, 3], [2, 4]]),
          "matmul: dA = dC·Bᵀ and dB = Aᵀ·dC by hand (dC = I)")
    ax = {"m": 3, "n": 4, "k": 5}
    x = draw(op, ax, 1)
    r = call(op, "matmul", "fwd+bwd", ax, **x)
    check(close(r["c"], np.einsum("mk,kn->mn", x["a"], x["b"])), "matmul: C against einsum")
    loss = lambda a, b: float((np.einsum("mk,kn->mn", a, b) * x["dc"]).sum())  # noqa: E731
    check(close(r["da"], grad_fd(lambda a: loss(a, x["b"]), x["a"])), "matmul: dA against finite differences")
    check(close(r["db"], grad_fd(lambda b: loss(x["a"], b), x["b"])), "matmul: dB against finite differences")
    e = {"m": 3, "n": 4, "k": 5, "s": 2}
    check(formula(op["passes"]["fwd"]["bytes"], e) == (15 + 20 + 12) * 2, "matmul: fwd bytes = (mk + kn + mn) s")
    check(formula(op["passes"]["fwd+bwd"]["bytes"], e) == 2 * 47 * 2, "matmul: fwd+bwd bytes = A, B, dC read, C, dA, dB written")
    check(formula(op["passes"]["fwd"]["flops"], e) == 120 and formula(op["passes"]["fwd+bwd"]["flops"], e) == 360,
          "matmul: flops 2mnk fwd, 6mnk fwd+bwd")
    e = {"m": 8192, "n": 8192, "k": 8192, "s": 2}
    check(formula(op["passes"]["fwd"]["flops"], e) == 2 * 8192 ** 3, "matmul: 8192^3 is 1.1e12 flops")


def attention_direct(q, k, v, causal):
    """An independent float64 SDPA: one (batch, head, query) at a time, in plain loops."""
    b, h, sq, d = q.shape
    kvh, sk = k.shape[1], k.shape[2]
    o = np.zeros_like(q)
    for bi in range(b):
        for hi in range(h):
            kv = hi * kvh // h
            for i in range(sq):
                w = []
                for j in range(sk):
                    if causal and j > i + sk - sq:
                        continue
                    w.append((math.exp(float(q[bi, hi, i] @ k[bi, kv, j]) / math.sqrt(d)), j))
                z = sum(x for x, _ in w)
                o[bi, hi, i] = sum(x / z * v[bi, kv, j] for x, j in w)
    return o


def test_attention():
    mod = ops["attention"]
    full, causal = mod.attention, mod.attention_causal
    # one head, d = 1: scores q k / 1 = [0, ln 3] -> weights 1/4, 3/4
    ax = {"batch": 1, "heads": 1, "kv_heads": 1, "seq_q": 1, "seq_k": 2, "head_dim": 1}
    r = call(full, "attention", "fwd", ax, q=[[[[1.0]]]], k=[[[[0.0], [math.log(3)]]]],
             v=[[[[2.0], [6.0]]]])
    check(abs(r["o"][0, 0, 0, 0] - (2 / 4 + 6 * 3 / 4)) < 1e-12, "attention: o by hand (weights 1/4, 3/4)")
    # causal 2 x 2: query 0 sees key 0 only; query 1 both
    ax = {"batch": 1, "heads": 1, "kv_heads": 1, "seq_q": 2, "seq_k": 2, "head_dim": 1}
    r = call(causal, "attention_causal", "fwd", ax, q=[[[[1.0], [1.0]]]], k=[[[[0.0], [0.0]]]],
             v=[[[[2.0], [6.0]]]])
    check(np.allclose(r["o"][0, 0, :, 0], [2.0, 4.0]), "attention_causal: lower triangle by hand")
    # GQA, causal and not, prefill and decode, against the loop
    for sq, sk in ((5, 5), (1, 7), (3, 7)):
        ax = {"batch": 2, "heads": 4, "kv_heads": 2, "seq_q": sq, "seq_k": sk, "head_dim": 3}
        x = draw(full, ax, sq * 10 + sk)
        for name, dec in (("attention", full), ("attention_causal", causal)):
            r = call(dec, name, "fwd", ax, **x)
            check(close(r["o"], attention_direct(x["q"], x["k"], x["v"], name != "attention")),
                  f"{name}: o against per-query loops, GQA 4/2, seq_q {sq} seq_k {sk}")
    ax = {"batch": 1, "heads": 2, "kv_heads": 1, "seq_q": 1, "seq_k": 6, "head_dim": 4}
    x = draw(full, ax, 7)
    check(close(call(causal, "attention_causal", "fwd", ax, **x)["o"], call(full, "attention", "fwd", ax, **x)["o"]),
          "attention_causal: a decode step (seq_q = 1) sees the whole cache")
    # backward against finite differences of sum(o * do), causal GQA
    ax = {"batch": 1, "heads": 2, "kv_heads": 1, "seq_q": 3, "seq_k": 4, "head_dim": 2}
    x = draw(full, ax, 11)
    for name, dec in (("attention", full), ("attention_causal", causal)):
        r = call(dec, name, "fwd+bwd", ax, **x)
        f = lambda **kw: float((attention_direct(kw["q"], kw["k"], kw["v"], name != "attention") * x["do"]).sum())  # noqa
        ok = all(close(r["d" + n], grad_fd(lambda y: f(**{**x, n: y}), x[n]), 1e-5) for n in ("q", "k", "v"))
        check(ok, f"{name}: dq, dk, dv against finite differences (GQA, seq_q 3, seq_k 4)")
    e = {"batch": 2, "heads": 4, "kv_heads": 2, "seq_q": 4, "seq_k": 4, "head_dim": 8, "s": 2}
    check(formula(full["passes"]["fwd"]["bytes"], e) == (2 * 2 * 4 * 4 * 8 + 2 * 2 * 2 * 4 * 8) * 2,
          "attention: fwd bytes = q, o at heads plus k, v at kv_heads")
    check(formula(full["passes"]["fwd+bwd"]["bytes"], e) == (4 * 256 + 4 * 128) * 2,
          "attention: fwd+bwd bytes = q, o, do, dq plus k, v, dk, dv")
    pairs = sum(1 for i in range(4) for j in range(4) if j <= i)
    check(formula(causal["passes"]["fwd"]["flops"], e) == 4 * 2 * 4 * 8 * pairs
          and formula(full["passes"]["fwd"]["flops"], e) == 4 * 2 * 4 * 8 * 16,
          "attention: fwd flops 4 b h d per unmasked pair (causal 4x4: 10 pairs)")
    e.update(seq_q=3, seq_k=7)
    pairs = sum(1 for i in range(3) for j in range(7) if j <= i + 4)
    check(formula(causal["passes"]["fwd+bwd"]["flops"], e) == 14 * 2 * 4 * 8 * pairs,
          "attention_causal: fwd+bwd flops 3.5x fwd over the bottom-right pairs (3 x 7)")
    e.update(seq_q=1, seq_k=4096)
    check(formula(causal["passes"]["fwd"]["flops"], e) == formula(full["passes"]["fwd"]["flops"], e),
          "attention: decode flops are the same causal or not")


def test_cross_entropy():
    mod = ops["cross_entropy"]
    op = mod.cross_entropy
    # vocab 2: target (7919 * 0 + 13) mod 2 = 1; logits [0, ln 3]: loss = ln 4 - ln 3
    r = call(op, "cross_entropy", "fwd+bwd", {"rows": 1, "vocab": 2}, logits=[[0.0, math.log(3)]])
    check(abs(r["loss"][0] - math.log(4 / 3)) < 1e-12, "cross_entropy: loss by hand (target 1 of 2)")
    check(np.allclose(r["dlogits"], [[0.25, -0.25]]), "cross_entropy: dlogits = softmax - onehot by hand")
    check(list(mod._targets(3, 10, np)) == [3, 2, 1], "cross_entropy: targets (7919 r + 13) mod vocab")
    ax = {"rows": 5, "vocab": 37}
    x = {"logits": np.random.default_rng(3).uniform(-8, 8, (5, 37)) + 30}
    r = call(op, "cross_entropy", "fwd+bwd", ax, **x)
    tgt = (7919 * np.arange(5) + 13) % 37
    lse = np.log(np.exp(x["logits"] - 30).sum(1)) + 30
    check(close(r["loss"], lse - x["logits"][np.arange(5), tgt]), "cross_entropy: loss against log-sum-exp")
    mean = lambda y: float(np.mean(np.log(np.exp(y - 30).sum(1)) + 30 - y[np.arange(5), tgt]))  # noqa
    check(close(r["dlogits"], grad_fd(mean, x["logits"])), "cross_entropy: dlogits = d(mean loss) by finite differences")
    check(close(call(op, "cross_entropy", "fwd", ax, **x)["loss"], r["loss"]) and
          "dlogits" not in call(op, "cross_entropy", "fwd", ax, **x), "cross_entropy: fwd gives loss only")
    e = {"rows": 4096, "vocab": 151936, "s": 2}
    check(formula(op["passes"]["fwd"]["bytes"], e) == 4096 * 151936 * 2 + 4096 * 12,
          "cross_entropy: fwd bytes = logits once + targets (8) + loss (4) a row")
    check(formula(op["passes"]["fwd+bwd"]["bytes"], e) == 2 * 4096 * 151936 * 2 + 4096 * 12,
          "cross_entropy: fwd+bwd bytes = logits read + dlogits written")
    check(formula(op["passes"]["fwd"]["flops"], e) == 4 * 4096 * 151936
          and formula(op["passes"]["fwd+bwd"]["flops"], e) == 7 * 4096 * 151936, "cross_entropy: flops 4 and 7 a logit")
    ax = {"rows": 6, "vocab": 11}
    x = {"logits": np.random.default_rng(4).uniform(-8, 8, (6, 11)).astype(np.float32)}
    r = call(op, "cross_entropy", "fwd+bwd", ax, **x)
    t = types.SimpleNamespace(pass_="fwd+bwd", axes=ax, logits=x["logits"], loss=np.zeros(6, np.float32),
                              dlogits=np.zeros((6, 11), np.float32))
    arms.cross_entropy(t)()
    check(close(t.loss, r["loss"], 1e-4) and close(t.dlogits, r["dlogits"], 1e-4), "cross_entropy: the numpy arm matches")


def test_rope():
    op = ops["rope"].rope
    th = 0.3
    ax = {"batch": 1, "heads": 1, "kv_heads": 1, "seq": 1, "head_dim": 2}
    r = call(op, "rope", "fwd", ax, q=[[[[1.0, 0.0]]]], k=[[[[0.0, 2.0]]]],
             cos=[[math.cos(th), 99.0]], sin=[[math.sin(th), 99.0]])
    check(np.allclose(r["q_out"][0, 0, 0], [math.cos(th), math.sin(th)])
          and np.allclose(r["k_out"][0, 0, 0], [-2 * math.sin(th), 2 * math.cos(th)]),
          "rope: a rotation by the first half's angle by hand (the second half of the tables unread)")
    ax = {"batch": 2, "heads": 4, "kv_heads": 2, "seq": 3, "head_dim": 6}
    x = draw(op, ax, 5)
    r = call(op, "rope", "fwd+bwd", ax, **x)
    c, s = x["cos"][:, :3], x["sin"][:, :3]
    cplx = lambda v: v[..., :3] + 1j * v[..., 3:]  # noqa: E731
    for n in ("q", "k"):
        z = cplx(x[n]) * (c + 1j * s)
        check(close(r[n + "_out"], np.concatenate([z.real, z.imag], -1)), f"rope: {n}_out = (x1 + i x2)(c + i s)")
        f = lambda y: float((cplx(y) * (c + 1j * s)).real.ravel() @ x["d" + n + "_out"][..., :3].ravel()  # noqa
                            + (cplx(y) * (c + 1j * s)).imag.ravel() @ x["d" + n + "_out"][..., 3:].ravel())
        check(close(r["d" + n], grad_fd(f, x[n])), f"rope: d{n} against finite differences")
    e = {"batch": 8, "heads": 14, "kv_heads": 2, "seq": 4096, "head_dim": 64, "s": 2}
    qk = (8 * 14 + 8 * 2) * 4096 * 64
    check(formula(op["passes"]["fwd"]["bytes"], e) == (2 * qk + 4096 * 64) * 2,
          "rope: fwd bytes = q, k read and written + the half tables")
    check(formula(op["passes"]["fwd+bwd"]["bytes"], e) == (4 * qk + 4096 * 64) * 2, "rope: fwd+bwd bytes")
    check(formula(op["passes"]["fwd"]["flops"], e) == 3 * qk and formula(op["passes"]["fwd+bwd"]["flops"], e) == 6 * qk,
          "rope: flops 3 an element (6 fwd+bwd)")
    t = types.SimpleNamespace(pass_="fwd+bwd", axes=ax, **x, q_out=np.zeros_like(x["q"]), k_out=np.zeros_like(x["k"]),
                              dq=np.zeros_like(x["q"]), dk=np.zeros_like(x["k"]))
    arms.rope(t)()
    check(all(close(getattr(t, n), r[n]) for n in ("q_out", "k_out", "dq", "dk")), "rope: the numpy arm matches")


def test_swiglu():
    op = ops["swiglu"].swiglu
    r = call(op, "swiglu", "fwd+bwd", {"rows": 1, "cols": 2}, a=[[0.0, math.log(3)]], b=[[5.0, 2.0]],
             dy=[[1.0, 1.0]])
    check(np.allclose(r["y"], [[0.0, math.log(3) * 0.75 * 2]]), "swiglu: y by hand (sigmoid(ln 3) = 3/4)")
    check(np.allclose(r["db"], [[0.0, math.log(3) * 0.75]]) and abs(r["da"][0, 0] - 2.5) < 1e-12,
          "swiglu: db = silu(a), da at a = 0 is b / 2 by hand")
    ax = {"rows": 3, "cols": 4}
    x = draw(op, ax, 9)
    r = call(op, "swiglu", "fwd+bwd", ax, **x)
    f = lambda a, b: float((a / (1 + np.exp(-a)) * b * x["dy"]).sum())  # noqa: E731
    check(close(r["da"], grad_fd(lambda a: f(a, x["b"]), x["a"])) and close(r["db"], grad_fd(lambda b: f(x["a"], b), x["b"])),
          "swiglu: da, db against finite differences")
    e = {"rows": 4096, "cols": 4864, "s": 2}
    check(formula(op["passes"]["fwd"]["bytes"], e) == 3 * 4096 * 4864 * 2
          and formula(op["passes"]["fwd+bwd"]["bytes"], e) == 6 * 4096 * 4864 * 2,
          "swiglu: bytes a, b read + y written; fwd+bwd each of a, b, dy, y, da, db once")


def test_arms_match():
    """matmul and attention numpy arms (float32) against the float64 references."""
    op = ops["matmul"].matmul
    ax = {"m": 4, "n": 3, "k": 5}
    x = {k: v.astype(np.float32) for k, v in draw(op, ax, 2).items()}
    r = call(op, "matmul", "fwd+bwd", ax, **x)
    t = types.SimpleNamespace(pass_="fwd+bwd", axes=ax, **x, c=np.zeros((4, 3), np.float32),
                              da=np.zeros((4, 5), np.float32), db=np.zeros((5, 3), np.float32))
    arms.matmul(t)()
    check(all(close(getattr(t, n), r[n], 1e-4) for n in ("c", "da", "db")), "matmul: the numpy arm matches")
    mod = ops["attention"]
    ax = {"batch": 2, "heads": 4, "kv_heads": 2, "seq_q": 3, "seq_k": 5, "head_dim": 4}
    x = {k: v.astype(np.float32) for k, v in draw(mod.attention, ax, 8).items()}
    for name in ("attention", "attention_causal"):
        r = call(getattr(mod, name), name, "fwd+bwd", ax, **x)
        t = types.SimpleNamespace(pass_="fwd+bwd", operation=name, axes=ax, **x,
                                  **{n: np.zeros_like(x[n[1:]] if n != "o" else x["q"]) for n in ("o", "dq", "dk", "dv")})
        arms.attention(t)()
        check(all(close(getattr(t, n), r[n], 1e-4) for n in ("o", "dq", "dk", "dv")), f"{name}: the numpy arm matches")


for test in (test_matmul, test_attention, test_cross_entropy, test_rope, test_swiglu, test_arms_match):
    try:
        test()
    except Exception as e:  # noqa: BLE001
        check(False, f"{test.__name__} raised {type(e).__name__}: {e}")
print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
