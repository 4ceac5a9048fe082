# GPU check of the shipped Python peer arms (kernels/python/) without prereg: builds prereg's
# `t` from torch CUDA tensors on a side stream made current (as prereg makes its own stream
# current), checks every arm against a float64 reference with prereg's tolerance rule, times
# its step with CUDA events (L2 flushed before each sample, as prereg does by default), times
# the first call (JIT/compile) apart, and tries to capture one step into a CUDA graph both
# with torch.cuda.graph and with a raw cudaStreamBeginCapture on the stream (what a host that
# does not go through torch does). Run on a GPU machine: python3 tests/device/python_arms.py
# [--quick] [--window flush|idle] [--out FILE.jsonl]. Prints one line per case and a closing
# "N passed, N failed".
import argparse
import ctypes
import importlib.util
import json
import pathlib
import sys
import time
import traceback
import types

import torch

REPO = pathlib.Path(__file__).resolve().parents[2]
EPS = {"layernorm": 1e-5, "rmsnorm": 1e-6}
TOL = {"fp32": (1e-5, 1e-5), "fp16": (1e-3, 1e-3), "bf16": (1.6e-2, 1e-2)}
TYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def load(relative):
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_t(op, pass_, rows, cols, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    st = TYPES[dtype]
    u = lambda lo, hi, *shape: torch.rand(*shape, generator=g, device="cuda",
                                          dtype=torch.float64) * (hi - lo) + lo
    t = types.SimpleNamespace(rows=rows, cols=cols, dtype=dtype, eps=EPS[op], pass_=pass_,
                              device="cuda", options={})
    t.x = (u(-2, 2, rows, cols) + u(-3, 3, rows, 1)).to(st)
    t.gamma = u(0.5, 1.5, cols).to(st)
    t.beta = u(-0.5, 0.5, cols).to(st) if op == "layernorm" else None
    bwd = pass_ == "fwd+bwd"
    t.dy = u(-1, 1, rows, cols).to(st) if bwd else None
    nan = lambda *shape, dt=st: torch.full(shape, float("nan"), device="cuda", dtype=dt)
    t.y = nan(rows, cols)
    t.rstd = nan(rows, dt=torch.float32)
    t.mean = nan(rows, dt=torch.float32) if op == "layernorm" else None
    t.dx = nan(rows, cols) if bwd else None
    t.dgamma = nan(cols) if bwd else None
    t.dbeta = nan(cols) if bwd and op == "layernorm" else None
    if op == "rmsnorm":
        del t.beta, t.mean, t.dbeta
    return t


def reference(op, t):
    x = t.x.double()
    g = t.gamma.double()
    bwd = t.pass_ == "fwd+bwd"
    out = {}
    if op == "layernorm":
        mean = x.mean(1)
        xc = x - mean[:, None]
        rstd = 1 / torch.sqrt((xc * xc).mean(1) + t.eps)
        xhat = xc * rstd[:, None]
        out.update(y=xhat * g + t.beta.double(), mean=mean, rstd=rstd)
        if bwd:
            dy = t.dy.double()
            wdy = dy * g
            out["dx"] = rstd[:, None] * (wdy - wdy.mean(1, keepdim=True)
                                         - xhat * (wdy * xhat).mean(1, keepdim=True))
            out["dgamma"] = (dy * xhat).sum(0)
            out["dbeta"] = dy.sum(0)
    else:
        rstd = 1 / torch.sqrt((x * x).mean(1) + t.eps)
        out.update(y=x * rstd[:, None] * g, rstd=rstd)
        if bwd:
            dy = t.dy.double()
            wdy = dy * g
            out["dx"] = rstd[:, None] * (wdy - x * (rstd**2)[:, None]
                                         * (wdy * x).mean(1, keepdim=True))
            out["dgamma"] = (dy * x * rstd[:, None]).sum(0)
    return out


def check(op, t, result):
    """prereg's rule: |got - ref| <= atol + rtol * max|ref|; NaN fails; statistics optional."""
    rtol, atol = TOL[t.dtype]
    got = result if result is not None else {k: getattr(t, k) for k in
                                              ("y", "mean", "rstd", "dx", "dgamma", "dbeta")
                                              if getattr(t, k, None) is not None}
    problems = []
    for name, ref in reference(op, t).items():
        if name not in got:
            if name not in ("mean", "rstd"):
                problems.append(f"{name} missing")
            continue
        v = got[name].double()
        if v.shape != ref.shape:
            problems.append(f"{name} shape {tuple(v.shape)} vs {tuple(ref.shape)}")
            continue
        tol = atol + rtol * ref.abs().max().item()
        err = (v - ref).abs()
        bad = ~(err <= tol)
        if bad.any():
            worst = err.nan_to_num(1e30).max().item()
            problems.append(f"{name}: {int(bad.sum())} bad, max err {worst:.3g} tol {tol:.3g}")
    return problems


class RawCapture:
    """cudaStreamBeginCapture/EndCapture/GraphInstantiate/GraphLaunch through ctypes."""

    def __init__(self):
        self.rt = None
        for name in ("libcudart.so.12", "libcudart.so.13", "libcudart.so"):
            try:
                self.rt = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if self.rt is None:
            import glob
            import os
            for path in glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia",
                                               "cu*", "lib", "libcudart.so*")):
                self.rt = ctypes.CDLL(path)
                break

    def call(self, name, *args):
        rc = getattr(self.rt, name)(*args)
        if rc != 0:
            self.rt.cudaGetErrorString.restype = ctypes.c_char_p
            raise RuntimeError(f"{name}: {self.rt.cudaGetErrorString(rc).decode()} ({rc})")

    def capture(self, stream, fn, mode):
        s = ctypes.c_void_p(stream.cuda_stream)
        graph, exe = ctypes.c_void_p(), ctypes.c_void_p()
        self.call("cudaStreamBeginCapture", s, ctypes.c_int(mode))
        try:
            out = fn()
        finally:
            rc = self.rt.cudaStreamEndCapture(s, ctypes.byref(graph))
        if rc != 0:
            raise RuntimeError(f"cudaStreamEndCapture failed ({rc})")
        self.call("cudaGraphInstantiate", ctypes.byref(exe), graph, ctypes.c_ulonglong(0))
        return exe, out

    def launch(self, exe, stream):
        self.call("cudaGraphLaunch", exe, ctypes.c_void_p(stream.cuda_stream))


IDLE_WINDOW = False  # --window idle: open each window on an idle GPU


def time_calls(stream, call, flush, samples):
    """Median of `samples` event-timed calls, each after an L2 flush on the stream [us].

    --window flush (the default) times as prereg's CUDA device does: the start event is
    recorded right behind the flush, so host work shorter than the flush is hidden. --window
    idle waits for the flush first, so the whole host call path lands in the window.
    """
    times = []
    for _ in range(samples):
        flush.zero_()
        if IDLE_WINDOW:
            stream.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(stream)
        call()
        b.record(stream)
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2] * 1e3  # median [us]


def run_case(rec, arm_fn, op, pass_, rows, cols, dtype, samples, stream, flush, raw, graphs):
    t = make_t(op, pass_, rows, cols, dtype, seed=rows * 31 + cols)
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        step = arm_fn(t)
        t0 = time.perf_counter()
        result = step()
        stream.synchronize()
        rec["first_call_s"] = round(time.perf_counter() - t0, 4)
        problems = check(op, t, result)
        rec["correct"] = not problems
        if problems:
            rec["problems"] = problems
        step()  # a second call, then the timed ones
        rec["stream_us"] = round(time_calls(stream, step, flush, samples), 2)
        if not graphs:
            return
        for mode_name, mode in (("global", 0), ("thread_local", 1), ("relaxed", 2)):
            poison(t)
            try:
                exe, out = raw.capture(stream, step, mode)
                raw.launch(exe, stream)
                stream.synchronize()
                bad = check(op, t, out)
                rec[f"raw_{mode_name}"] = "ok" if not bad else f"wrong: {bad[:2]}"
                if not bad and "raw_graph_us" not in rec:
                    rec["raw_graph_us"] = round(
                        time_calls(stream, lambda: raw.launch(exe, stream), flush, samples), 2)
            except Exception as error:
                rec[f"raw_{mode_name}"] = last_line(error)
                torch.cuda.synchronize()
        poison(t)
        try:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=stream):
                out = step()
            g.replay()
            stream.synchronize()
            bad = check(op, t, out)
            rec["torch_graph"] = "ok" if not bad else f"wrong: {bad[:2]}"
            if not bad:
                rec["torch_graph_us"] = round(time_calls(stream, g.replay, flush, samples), 2)
        except Exception as error:
            rec["torch_graph"] = last_line(error)
            torch.cuda.synchronize()


def poison(t):
    for k in ("y", "dx", "dgamma", "dbeta"):
        if getattr(t, k, None) is not None:
            getattr(t, k).fill_(float("nan"))


def last_line(error):
    lines = str(error).strip().splitlines() or [""]
    return f"{type(error).__name__}: {lines[-1][:200]}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--only", default="")
    ap.add_argument("--window", choices=("flush", "idle"), default="flush")
    args = ap.parse_args()
    global IDLE_WINDOW
    IDLE_WINDOW = args.window == "idle"
    env = {"window": args.window, "python": sys.version.split()[0], "torch": torch.__version__,
           "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name()}
    try:
        import triton
        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    print(json.dumps(env), flush=True)
    out = open(args.out, "w") if args.out else None
    torch_arms = load("kernels/python/torch_norms.py")
    triton_arms = load("kernels/python/triton_layernorm.py")
    ln_rows = [128, 512, 1024, 4096, 16384, 65536]
    rms_rows = [1, 16, 128, 512, 2048, 8192, 65536]
    arms = [
        ("ln_eager", torch_arms.layernorm_eager, "layernorm"),
        ("ln_triton", triton_arms.layernorm, "layernorm"),
        ("rms_eager", torch_arms.rmsnorm_eager, "rmsnorm"),
        ("rms_hf", torch_arms.rmsnorm_hf, "rmsnorm"),
        ("ln_compiled", torch_arms.layernorm_compiled, "layernorm"),
        ("rms_compiled", torch_arms.rmsnorm_compiled, "rmsnorm"),
        ("rms_hf_compiled", torch_arms.rmsnorm_hf_compiled, "rmsnorm"),
    ]
    cases = []
    for name, fn, op in arms:
        if args.only and not name.startswith(args.only):
            continue
        rows_list = ln_rows if op == "layernorm" else rms_rows
        dtype = "fp32" if op == "layernorm" else "fp16"
        cols = 1024 if op == "layernorm" else 896
        if args.quick:
            rows_list = [rows_list[0], rows_list[-1]]
        for pass_ in ("fwd", "fwd+bwd"):
            for rows in rows_list:
                cases.append((name, fn, op, pass_, rows, cols, dtype, True))
        for dtype2 in ("fp32", "fp16", "bf16"):  # every dtype at one odd shape, correctness
            if dtype2 != dtype:
                for pass_ in ("fwd", "fwd+bwd"):
                    cases.append((name, fn, op, pass_, 1000, 768 if op == "layernorm" else 896,
                                  dtype2, False))
    stream = torch.cuda.Stream()
    flush = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    raw = RawCapture()
    passed = failed = 0
    start = time.time()
    for name, fn, op, pass_, rows, cols, dtype, timed in cases:
        rec = {"arm": name, "pass": pass_, "rows": rows, "cols": cols, "dtype": dtype}
        try:
            run_case(rec, fn, op, pass_, rows, cols, dtype, args.samples if timed else 3, stream,
                     flush, raw, graphs=timed and rows in (128, 1, 16, 65536))
        except Exception as error:
            rec["error"] = traceback.format_exc().strip().splitlines()[-1][:300]
            torch.cuda.synchronize()
        ok = rec.get("correct") is True
        passed += ok
        failed += not ok
        rec["elapsed_s"] = round(time.time() - start, 1)
        line = json.dumps(rec)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
