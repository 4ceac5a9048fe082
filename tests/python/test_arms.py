# Checks the shipped Python arms and the planted cheating arms against a float64 reference,
# through a fake `t` (prereg's Python-arm argument: numpy arrays on the cpu device).
# Run: /usr/bin/python3 tests/python/test_arms.py   (numpy needed; torch arms skipped without torch)
import importlib.util
import pathlib
import sys
import traceback
import types

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
EPS = {"layernorm": 1e-5, "rmsnorm": 1e-6, "softmax": 0.0}
TOLERANCE = {"fp32": (1e-5, 1e-5), "fp16": (1e-3, 1e-3)}  # prereg's defaults (rtol, atol)
NUMPY_TYPE = {"fp32": np.float32, "fp16": np.float16}
OUTPUTS = {  # name -> produced by the backward
    "layernorm": {"y": False, "mean": False, "rstd": False, "dx": True, "dgamma": True,
                  "dbeta": True},
    "rmsnorm": {"y": False, "rstd": False, "dx": True, "dgamma": True},
    "softmax": {"y": False, "dx": True},
}
STATISTICS = {"mean", "rstd"}


def load(relative):
    """Imports a file as a module, as prereg does with an arm's file."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the fake t and the reference -----------------------------------------------------------


def make_t(op, pass_, rows, cols, dtype="fp32", seed=1):
    """prereg's `t` for one cell: inputs drawn as docs/operations.md says, outputs NaN-poisoned."""
    rng = np.random.default_rng(seed)
    st = NUMPY_TYPE[dtype]
    x = rng.uniform(-2, 2, (rows, cols)) + rng.uniform(-3, 3, (rows, 1))
    t = types.SimpleNamespace(rows=rows, cols=cols, dtype=dtype, eps=EPS[op], pass_=pass_,
                              device="cpu", options={})
    t.x = x.astype(st)
    if op != "softmax":
        t.gamma = rng.uniform(0.5, 1.5, cols).astype(st)
    if op == "layernorm":
        t.beta = rng.uniform(-0.5, 0.5, cols).astype(st)
    backward = pass_ == "fwd+bwd"
    t.dy = rng.uniform(-1, 1, (rows, cols)).astype(st) if backward else None
    for name, of_backward in OUTPUTS[op].items():
        if of_backward and not backward:
            setattr(t, name, None)
            continue
        shape = {"dgamma": (cols,), "dbeta": (cols,)}.get(name, (rows, cols))
        if name in STATISTICS:
            setattr(t, name, np.full(rows, np.nan, np.float32))
        else:
            setattr(t, name, np.full(shape, np.nan, st))
    return t


def reference(op, t):
    """The float64 outputs of t's pass (docs/operations.md), from t's current inputs."""
    x = t.x.astype(np.float64)
    backward = t.pass_ == "fwd+bwd"
    dy = t.dy.astype(np.float64) if backward else None
    out = {}
    if op == "softmax":
        e = np.exp(x - x.max(axis=1, keepdims=True))
        y = e / e.sum(axis=1, keepdims=True)
        out["y"] = y
        if backward:
            out["dx"] = y * (dy - np.sum(dy * y, axis=1, keepdims=True))
        return out
    g = t.gamma.astype(np.float64)
    if op == "layernorm":
        mean = x.mean(axis=1)
        rstd = 1 / np.sqrt(((x - mean[:, None]) ** 2).mean(axis=1) + t.eps)
        xhat = (x - mean[:, None]) * rstd[:, None]
        out.update(y=xhat * g + t.beta.astype(np.float64), mean=mean, rstd=rstd)
        if backward:
            wdy = dy * g
            out["dx"] = rstd[:, None] * (wdy - wdy.mean(axis=1, keepdims=True)
                                         - xhat * (wdy * xhat).mean(axis=1, keepdims=True))
            out["dgamma"] = (dy * xhat).sum(axis=0)
            out["dbeta"] = dy.sum(axis=0)
        return out
    rstd = 1 / np.sqrt((x * x).mean(axis=1) + t.eps)
    out.update(y=x * rstd[:, None] * g, rstd=rstd)
    if backward:
        wdy = dy * g
        out["dx"] = rstd[:, None] * (wdy - x * (rstd**2)[:, None]
                                     * (wdy * x).mean(axis=1, keepdims=True))
        out["dgamma"] = (dy * x * rstd[:, None]).sum(axis=0)
    return out


def compare(got, ref, rtol, atol):
    """prereg's check: |got - ref| <= atol + rtol * max|ref| everywhere, NaN never matches."""
    got = np.asarray(got, dtype=np.float64)
    if got.shape != ref.shape:
        return f"shape {got.shape}, reference {ref.shape}"
    tolerance = atol + rtol * float(np.max(np.abs(ref)))
    err = np.abs(got - ref)
    bad = ~(err <= tolerance)  # NaN compares false
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), bad.shape)
        return f"{int(bad.sum())} bad, first at {i}: {got[i]!r} vs {ref[i]!r}"
    return None


def outputs_of(t, result, op):
    """The step's outputs: its dict, or else what it wrote into t's buffers."""
    if result is not None:
        return {k: np.asarray(v) for k, v in result.items()}
    return {name: getattr(t, name) for name in OUTPUTS[op] if getattr(t, name) is not None}


def check_outputs(op, t, got, statistics_optional=False):
    """Each output of t's pass against the reference; returns the list of mismatches."""
    rtol, atol = TOLERANCE[t.dtype]
    problems = []
    for name, ref in reference(op, t).items():
        if name not in got:
            if not (statistics_optional and name in STATISTICS):
                problems.append(f"{name} missing")
            continue
        bad = compare(got[name], ref, rtol, atol)
        if bad:
            problems.append(f"{name}: {bad}")
    return problems


# --- the tests --------------------------------------------------------------------------------

SHAPES = [(1, 1), (1, 8), (7, 33), (64, 1024), (257, 896), (1024, 4096)]
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


class Skip(Exception):
    """A test whose requirement (torch) is absent here."""


@test
def numpy_norms_match_the_reference():
    arms = load("kernels/python/numpy_norms.py")
    for op in ("layernorm", "rmsnorm", "softmax"):
        for pass_ in ("fwd", "fwd+bwd"):
            for dtype in ("fp32", "fp16"):
                for rows, cols in SHAPES:
                    t = make_t(op, pass_, rows, cols, dtype, seed=rows * 7 + cols)
                    x_before = t.x.copy()
                    got = outputs_of(t, getattr(arms, op)(t)(), op)
                    problems = check_outputs(op, t, got)
                    assert not problems, f"{op} {pass_} {dtype} {rows}x{cols}: {problems}"
                    assert np.array_equal(t.x, x_before), f"{op} changed its input"
                    assert got["y"].dtype == NUMPY_TYPE[dtype], f"{op} y is {got['y'].dtype}"


@test
def numpy_norms_refuse_bf16_and_cuda():
    arms = load("kernels/python/numpy_norms.py")
    t = make_t("layernorm", "fwd", 4, 8)
    t.dtype = "bf16"
    expect_raises(lambda: arms.layernorm(t), "numpy has no bf16")
    t = make_t("layernorm", "fwd", 4, 8)
    t.device = "cuda"
    expect_raises(lambda: arms.layernorm(t), "cpu device")


@test
def numpy_norms_step_reads_the_current_inputs():
    # A step is called many times on one t while prereg refreshes the inputs in place.
    arms = load("kernels/python/numpy_norms.py")
    t = make_t("layernorm", "fwd+bwd", 16, 64)
    step = arms.layernorm(t)
    step()
    t.x[...] = make_t("layernorm", "fwd+bwd", 16, 64, seed=99).x
    assert not check_outputs("layernorm", t, outputs_of(t, step(), "layernorm"))


def expect_raises(call, text):
    try:
        call()
    except Exception as error:  # the arm's exception becomes an arm-error deviation
        assert text in str(error), f"raised {error!r}, expected {text!r} in it"
        return
    raise AssertionError(f"did not raise (expected {text!r})")


CHEAT = "tests/data/python/cheating_arms.py"


@test
def cheating_correct_passes():
    arms = load(CHEAT)
    for pass_ in ("fwd", "fwd+bwd"):
        t = make_t("layernorm", pass_, 64, 1024)
        step = arms.layernorm_correct(t)
        for seed in (1, 2):
            t.x[...] = make_t("layernorm", pass_, 64, 1024, seed=seed).x
            assert not check_outputs("layernorm", t, outputs_of(t, step(), "layernorm"))


@test
def cheating_cached_returns_stale_outputs_for_the_same_address():
    arms = load(CHEAT)
    arms._cache.clear()
    t = make_t("layernorm", "fwd+bwd", 64, 1024)
    step = arms.layernorm_cached(t)
    first = step()
    assert not check_outputs("layernorm", t, outputs_of(t, first, "layernorm"))
    t.x[...] = make_t("layernorm", "fwd+bwd", 64, 1024, seed=5).x  # refreshed in place
    second = step()
    assert second is first, "the cached arm should hand back its first result"
    problems = check_outputs("layernorm", t, outputs_of(t, second, "layernorm"))
    assert any(p.startswith("y:") for p in problems), problems
    # A fresh buffer (another address) is computed honestly: rotation alone defeats it.
    u = make_t("layernorm", "fwd+bwd", 64, 1024, seed=6)
    assert not check_outputs("layernorm", u, outputs_of(u, arms.layernorm_cached(u)(),
                                                        "layernorm"))


@test
def cheating_mutating_changes_its_input():
    arms = load(CHEAT)
    t = make_t("layernorm", "fwd", 64, 1024)
    x_before = t.x.copy()
    got = outputs_of(t, arms.layernorm_mutating(t)(), "layernorm")
    assert np.array_equal(t.x, x_before * np.float32(0.5)), "x was not halved in place"
    t.x[...] = x_before  # its outputs were those of the input it was given
    assert not check_outputs("layernorm", t, got)


@test
def cheating_zeros_returns_zeros():
    arms = load(CHEAT)
    t = make_t("layernorm", "fwd+bwd", 64, 1024)
    got = outputs_of(t, arms.layernorm_zeros(t)(), "layernorm")
    assert set(got) == set(OUTPUTS["layernorm"]), sorted(got)
    assert all(not np.any(v) for v in got.values()), "not all zeros"
    assert len(check_outputs("layernorm", t, got)) == len(got)


@test
def cheating_raises_raises():
    arms = load(CHEAT)
    t = make_t("layernorm", "fwd", 4, 8)
    expect_raises(arms.layernorm_raises(t), "planted failure")


@test
def cheating_no_beta_is_wrong_in_y_only():
    arms = load(CHEAT)
    t = make_t("layernorm", "fwd+bwd", 64, 1024)
    problems = check_outputs("layernorm", t, outputs_of(t, arms.layernorm_no_beta(t)(),
                                                        "layernorm"))
    assert [p.split(":")[0] for p in problems] == ["y"], problems


@test
def cheating_lazy_leaves_the_poison():
    arms = load(CHEAT)
    t = make_t("layernorm", "fwd", 8, 16)
    assert arms.layernorm_lazy(t)() is None
    got = outputs_of(t, None, "layernorm")
    assert all(np.isnan(v).all() for v in got.values())
    assert check_outputs("layernorm", t, got)


@test
def cheating_thread_writes_after_the_step_returns():
    arms = load(CHEAT)
    t = make_t("layernorm", "fwd+bwd", 64, 1024)
    assert arms.layernorm_thread(t)() is None
    assert np.isnan(t.y).all(), "the outputs were written before the step returned"
    for worker in arms._threads:
        worker.join()
    assert not check_outputs("layernorm", t, outputs_of(t, None, "layernorm"))


@test
def examples_numpy_arm_matches_the_reference():
    arm = load("examples/python/numpy/layernorm_numpy.py")
    for pass_ in ("fwd", "fwd+bwd"):
        for rows, cols in SHAPES:
            t = make_t("layernorm", pass_, rows, cols)
            problems = check_outputs("layernorm", t, outputs_of(t, arm.layernorm(t)(),
                                                                "layernorm"))
            assert not problems, f"{pass_} {rows}x{cols}: {problems}"


def need_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise Skip("torch is not installed")
    return torch


@test
def torch_arms_on_cpu_tensors():
    torch = need_torch()
    arms = load("kernels/python/torch_norms.py")
    cases = [("layernorm", "layernorm_eager"), ("rmsnorm", "rmsnorm_hf")]
    if hasattr(torch.nn.functional, "rms_norm"):
        cases.append(("rmsnorm", "rmsnorm_eager"))
    for op, name in cases:
        for pass_ in ("fwd", "fwd+bwd"):
            # Not 1x1: there the variance is 0, rstd = 1/sqrt(eps) ~ 316, and torch 1.13's CPU
            # layer_norm was seen 3e-5 off y = beta, over the fp32 tolerance.
            for rows, cols in SHAPES[1:]:
                t = make_t(op, pass_, rows, cols, seed=rows + cols)
                x_before = t.x.copy()
                step = getattr(arms, name)(t)
                for _ in range(2):  # a second call must not see state left by the first
                    got = outputs_of(t, step(), op)
                    problems = check_outputs(op, t, got, statistics_optional=True)
                    assert not problems, f"{name} {pass_} {rows}x{cols}: {problems}"
                assert np.array_equal(t.x, x_before), f"{name} changed its input"


@test
def torch_arms_without_rms_norm_say_so():
    torch = need_torch()
    if hasattr(torch.nn.functional, "rms_norm"):
        raise Skip(f"torch {torch.__version__} has F.rms_norm")
    arms = load("kernels/python/torch_norms.py")
    expect_raises(lambda: arms.rmsnorm_eager(make_t("rmsnorm", "fwd", 2, 8)), "F.rms_norm")


@test
def examples_torch_arm_on_cpu_tensors():
    need_torch()
    arm = load("examples/python/torch/layernorm_torch.py")
    for pass_ in ("fwd", "fwd+bwd"):
        t = make_t("layernorm", pass_, 64, 1024)
        t_device = t.device
        problems = check_outputs("layernorm", t, outputs_of(t, arm.layernorm(t)(), "layernorm"),
                                 statistics_optional=True)
        assert not problems and t_device == "cpu", problems


@test
def triton_layernorm_imports_without_triton():
    try:
        import triton  # noqa: F401
        raise Skip("triton is installed here")
    except ImportError:
        pass
    arm = load("kernels/python/triton_layernorm.py")
    assert arm.group_size_m(1024) == 256 and arm.group_size_m(1025) == 128
    assert arm.group_size_m(8192) == 96 and arm.group_size_m(8193) == 64
    expect_raises(lambda: arm.layernorm(make_t("layernorm", "fwd", 2, 8)), "triton is not")


def main():
    passed = failed = skipped = 0
    for fn in TESTS:
        try:
            fn()
        except Skip as why:
            skipped += 1
            print(f"SKIP {fn.__name__}: {why}")
        except Exception:
            failed += 1
            print(f"FAIL {fn.__name__}")
            traceback.print_exc()
        else:
            passed += 1
            print(f"ok   {fn.__name__}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
