# GPU check that the planted side-stream arm (tests/data/python/cheating_torch_arms.py) does
# what it is planted for: when a window on the caller's stream closes, its side stream still has
# work pending, yet after a device-wide synchronisation its outputs are right, so only an
# off-window detector can catch it. The windows' times are printed beside the honest eager
# arm's, for information only. python3 tests/device/python_cheats.py
import importlib.util
import pathlib
import sys
import types

import torch

REPO = pathlib.Path(__file__).resolve().parents[2]


def load(relative):
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_t(pass_, rows, cols):
    g = torch.Generator(device="cuda").manual_seed(rows)
    r = lambda *s: torch.rand(*s, generator=g, device="cuda")
    t = types.SimpleNamespace(rows=rows, cols=cols, dtype="fp32", eps=1e-5, pass_=pass_,
                              device="cuda", options={})
    t.x, t.gamma, t.beta = r(rows, cols) * 4 - 2, r(cols) + 0.5, r(cols) - 0.5
    t.dy = r(rows, cols) * 2 - 1 if pass_ == "fwd+bwd" else None
    nan = lambda *s: torch.full(s, float("nan"), device="cuda")
    t.y, t.mean, t.rstd = nan(rows, cols), nan(rows), nan(rows)
    bwd = t.dy is not None
    t.dx, t.dgamma, t.dbeta = (nan(rows, cols), nan(cols), nan(cols)) if bwd else (None,) * 3
    return t


def window_us(stream, step, side=None):
    """One window on `stream` [us], and whether `side` still had work when it closed."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    a.record(stream)
    step()
    b.record(stream)
    b.synchronize()
    pending = side is not None and not side.query()
    return a.elapsed_time(b) * 1e3, pending


def main():
    cheats = load("tests/data/python/cheating_torch_arms.py")
    honest = load("kernels/python/torch_norms.py")
    stream = torch.cuda.Stream()
    passed = failed = 0
    for pass_ in ("fwd", "fwd+bwd"):
        t = make_t(pass_, 65536, 1024)
        with torch.cuda.stream(stream):
            eager = honest.layernorm_eager(t)
            cheat = cheats.layernorm_side_stream(t)
            eager(), cheat()  # warm
            torch.cuda.synchronize()
            ref = {k: v.clone() for k, v in eager().items()}
            honest_us = sorted(window_us(stream, eager)[0] for _ in range(9))[4]
            t.y.fill_(float("nan"))
            windows = [window_us(stream, cheat, cheats._streams[-1]) for _ in range(9)]
            torch.cuda.synchronize()
        cheat_us = sorted(w[0] for w in windows)[4]
        pending = sum(w[1] for w in windows)
        right = all(torch.allclose(getattr(t, k), v, rtol=1e-4, atol=1e-4) for k, v in ref.items())
        ok = pending > 0 and right
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {pass_}: side stream busy at {pending} of 9 window "
              f"closes; outputs right after a device sync: {right}; windows (information only): "
              f"side-stream {cheat_us:.1f} us, eager {honest_us:.1f} us")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
