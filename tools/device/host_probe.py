"""Where a Python arm's host time goes, inside prereg and outside it (issue 13, item 1).

Session 6 found the host-bound Python arms slower inside prereg than in a plain python3 loop:
the HF eager decode step 32.8 ms (pilot 21.3), eager LayerNorm fwd+bwd at 128x1024 378.7 us
(pilot 81.7 us in its flush window, 201 us in its idle one). This file measures the step's host
side directly, with the same wrapper in both places:

- As prereg Python arms (`ln_eager`, `decode_hf`, and `_plain` twins that wrap nothing), each
  step call is timed on the host: wall time (`time.perf_counter`) and the calling thread's CPU
  time (`time.thread_time`), and every garbage collection that runs inside a step is counted
  with its duration (`gc.callbacks`). wall >> cpu means the thread waited (a lock, the GIL,
  the scheduler); cpu ~ wall and both high means the code path itself ran slower (cold
  caches, a slower interpreter build, more work). The log goes to $PREREG_PROBE_LOG (JSON,
  rewritten every 16 calls, outside the wrapper's own timing).
- As a script (`python3 tools/device/host_probe.py ln|decode OUT.json`), the same steps in a plain
  python3 under the orders prereg might impose: hot back to back, each window after an input
  refresh + poison + a 256 MiB read sweep (prereg's window), and interleaved with the other
  arms of the protocol (prereg's default order), with CUDA events around each step. `micro`
  times the microbenches (`pybench`, `torchbench`) after each piece of prereg's pre-window
  host work; `micro-cpu` times `pybench` on the CPU alone (no torch).

Exploratory: nothing here is frozen, and nothing of it is a prereg measurement.
"""
import gc
import json
import os
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "kernels", "python"))

_LOG = {"arms": {}}
_GC = {"active": None, "t0": 0.0}


def _gc_cb(phase, info):
    rec = _GC["active"]
    if rec is None:
        return
    if phase == "start":
        _GC["t0"] = time.perf_counter()
    else:
        rec["gc_n"] += 1
        rec["gc_s"] += time.perf_counter() - _GC["t0"]
        rec["gc_gen"] = max(rec["gc_gen"], info.get("generation", 0))


gc.callbacks.append(_gc_cb)


def _threads():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def _save():
    path = os.environ.get("PREREG_PROBE_LOG")
    if path:
        with open(path + ".tmp", "w") as f:
            json.dump(_LOG, f)
        os.replace(path + ".tmp", path)


def _wrap(name, step):
    _record_facts(name)
    calls = _LOG["arms"].setdefault(name, {"calls": [], "threads_at_setup": _threads(),
                                          "gc_counts_at_setup": list(gc.get_count()),
                                          "gc_objects_at_setup": len(gc.get_objects())})["calls"]

    def probed():
        rec = {"gc_n": 0, "gc_s": 0.0, "gc_gen": -1}
        _GC["active"] = rec
        c0 = time.thread_time()
        w0 = time.perf_counter()
        r = step()
        w1 = time.perf_counter()
        c1 = time.thread_time()
        _GC["active"] = None
        calls.append([round((w1 - w0) * 1e6, 1), round((c1 - c0) * 1e6, 1), rec["gc_n"],
                      round(rec["gc_s"] * 1e6, 1), rec["gc_gen"]])
        if len(calls) % 16 == 0:
            _LOG["arms"][name]["threads_now"] = _threads()
            _save()
        return r

    return probed


# --- prereg arms -------------------------------------------------------------------------------


def ln_eager(t):
    import torch_norms
    return _wrap("ln_eager", torch_norms.layernorm_eager(t))


def ln_compiled(t):
    import torch_norms
    return _wrap("ln_compiled", torch_norms.layernorm_compiled(t))


def decode_hf(t):
    import qwen_decode
    return _wrap("decode_hf", qwen_decode.decode_hf(t))


def decode_fused(t):
    import qwen_decode
    return _wrap("decode_fused", qwen_decode.decode_fused(t))


def _write_y(t):
    """The LayerNorm output prereg's correctness gate checks: two torch ops after the bench."""
    import torch.nn.functional as F
    x, g, b, y = t.x, t.gamma, t.beta, t.y
    return lambda: y.copy_(F.layer_norm(x, (x.shape[-1],), g, b, float(t.eps)))


def _write_y_numpy(t):
    """The same output on the cpu device (numpy arrays), computed in float64."""
    import numpy as np

    def out():
        x = t.x.astype(np.float64)
        m = x.mean(axis=-1, keepdims=True)
        v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
        t.y[...] = ((x - m) / np.sqrt(v + float(t.eps)) * t.gamma + t.beta).astype(t.y.dtype)
    return out


def _pybench_step(t):
    # A fixed pure-Python workload (attribute, dict, list and call traffic like a model's
    # Python side): no torch, no CUDA. Its host time compares the interpreters themselves.
    class M:
        def __init__(self, i):
            self.w = i
            self.d = {"a": i, "b": i + 1}

        def f(self, x):
            return x + self.w + self.d["a"]

    ms = [M(i) for i in range(64)]
    out = _write_y(t) if getattr(t, "device", "cuda") == "cuda" else _write_y_numpy(t)

    loops = _LOG.setdefault("pybench_loop_us", [])

    def step():
        w0 = time.perf_counter()
        acc = 0
        for _ in range(40):
            for m in ms:
                acc = m.f(acc) & 0xFFFF
        loops.append(round((time.perf_counter() - w0) * 1e6, 1))
        out()
        return None

    return step


def pybench(t):
    return _wrap("pybench", _pybench_step(t))


def _torchbench_step(t):
    # 200 tiny torch ops on the current stream: the dispatcher and launch path alone.
    import torch
    a = t.x.reshape(-1)[:256].float().clone()
    b = a.clone()
    out = _write_y(t)

    def step():
        for _ in range(100):
            torch.add(a, b, out=b)
            torch.mul(b, 0.5, out=b)
        out()
        return None

    return step


def torchbench(t):
    return _wrap("torchbench", _torchbench_step(t))


def facts():
    """What could make the same Python code slower in one interpreter than another."""
    import sys as _s
    f = {"executable": _s.executable, "version": _s.version, "flags": repr(_s.flags),
         "xoptions": repr(getattr(_s, "_xoptions", {})), "switch": _s.getswitchinterval(),
         "gc_threshold": gc.get_threshold(), "profile": repr(_s.getprofile()),
         "trace": repr(_s.gettrace()), "threads": _threads(),
         "affinity": len(os.sched_getaffinity(0)),
         "env": {k: v for k, v in os.environ.items()
                 if k.startswith(("CUDA", "PYTORCH", "TORCH", "PYTHON", "OMP", "MKL", "LD_", "PREREG"))}}
    try:
        with open("/proc/self/maps") as m:
            libs = sorted({l.split()[-1] for l in m if ".so" in l})
        f["libs"] = [l for l in libs if any(k in l for k in ("python", "cudart", "cupti", "libcuda", "stdc++", "libc.so", "torch_cuda", "malloc"))]
    except OSError:
        pass
    try:
        import torch
        f.update({"torch": torch.__version__, "grad": torch.is_grad_enabled(),
                  "num_threads": torch.get_num_threads(),
                  "sync_debug": torch.cuda.get_sync_debug_mode() if torch.cuda.is_available() else None,
                  "deterministic": torch.are_deterministic_algorithms_enabled()})
    except Exception as e:  # noqa: BLE001 - a probe reports what it can
        f["torch_error"] = repr(e)
    return f


def _record_facts(name):
    _LOG.setdefault("facts", {})[name] = facts()


# --- the plain-python side ----------------------------------------------------------------------


class _NoRegion:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


def _t_ln(torch, rows, cols, pass_):
    t = types.SimpleNamespace(rows=rows, cols=cols, dtype="fp32", eps=1e-5, pass_=pass_,
                              device="cuda", operation="layernorm", options={})
    mk = lambda *s: torch.randn(*s, device="cuda")
    t.x, t.gamma, t.beta, t.dy = mk(rows, cols), mk(cols), mk(cols), mk(rows, cols)
    t.y, t.dx = mk(rows, cols), mk(rows, cols)
    t.dgamma, t.dbeta = mk(cols), mk(cols)
    t.mean, t.rstd = mk(rows), mk(rows)  # the Triton arm writes its saved statistics
    t.region = lambda label: _NoRegion()
    return t


def _t_qwen(torch):
    t = types.SimpleNamespace(rows=1, cols=896, dtype="fp16", eps=1e-6, pass_="fwd",
                              device="cuda", operation="rmsnorm", options={})
    t.x = (torch.rand(1, 896, device="cuda") * 2 - 1).half()
    t.gamma = (torch.rand(896, device="cuda") + 0.5).half()
    t.y = torch.full((1, 896), float("nan"), device="cuda", dtype=torch.float16)
    t.rstd = None
    t.region = lambda label: _NoRegion()
    return t


def _window_prep(torch):
    """What prereg does on the device before a window, as torch calls: prep(t) refreshes t.x,
    poisons t.y, runs a 256 MiB read sweep and synchronises."""
    sweep = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    acc = torch.empty((), dtype=torch.int64, device="cuda")

    def prep(t):
        t.x.uniform_(-1, 1)
        t.y.fill_(float("nan"))
        acc.copy_(sweep.view(torch.int32).sum())
        torch.cuda.synchronize()
    return prep


def _median_us(calls, column):
    return statistics.median(c[column] for c in calls)


def _plain_micro(torch, out_path):
    """pybench after each piece of host work prereg does before a Python arm's window, then
    pybench and torchbench back to back; prints and saves the medians."""
    t = _t_ln(torch, 128, 1024, "fwd")
    steps = {"pybench": _wrap("plain_pybench", _pybench_step(t)),
             "torchbench": _wrap("plain_torchbench", _torchbench_step(t))}
    prep = _window_prep(torch)

    def stats():
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.memory_allocated()

    befores = (("nothing", lambda: None),
               ("torch memory statistics", stats),
               ("cudaMemGetInfo twice", lambda: (torch.cuda.mem_get_info(), torch.cuda.mem_get_info())),
               ("fill, poison, read sweep, sync", lambda: prep(t)),
               ("memory statistics, then fill, poison, sweep, sync", lambda: (stats(), prep(t))))
    loops = _LOG.setdefault("pybench_loop_us", [])
    for bname, before in befores:
        for i in range(220):
            if i == 20:
                n0 = len(loops)
            before()
            steps["pybench"]()
        torch.cuda.synchronize()
        print(json.dumps({"micro": "pybench loop after " + bname,
                          "loop_us_median": statistics.median(loops[n0:])}), flush=True)
    for name, st in steps.items():
        for n in (20, 200):  # warm-up, then the calls whose medians are printed
            for _ in range(n):
                st()
            torch.cuda.synchronize()
        calls = _LOG["arms"]["plain_" + name]["calls"][-200:]
        print(json.dumps({"micro": name, "host_wall_us_median": _median_us(calls, 0),
                          "host_cpu_us_median": _median_us(calls, 1)}), flush=True)
    _LOG["plain_facts"] = facts()
    with open(out_path, "w") as f:
        json.dump(_LOG, f, indent=1)


def _plain(kind, out_path):
    import torch
    side = torch.cuda.Stream()
    torch.cuda.set_stream(torch.cuda.ExternalStream(side.cuda_stream))
    if kind == "micro":
        _plain_micro(torch, out_path)
        return
    if kind == "ln":
        import torch_norms
        import triton_layernorm
        ts = {n: _t_ln(torch, 128, 1024, "fwd+bwd") for n in ("eager", "compiled", "triton")}
        steps = {"eager": torch_norms.layernorm_eager(ts["eager"]),
                 "compiled": torch_norms.layernorm_compiled(ts["compiled"]),
                 "triton": triton_layernorm.layernorm(ts["triton"])}
        target, n, warm = "eager", 200, 30
    else:
        import qwen_decode
        ts = {n: _t_qwen(torch) for n in ("decode_hf", "decode_fused", "decode_graph", "prefill_hf")}
        steps = {n: getattr(qwen_decode, n)(ts[n]) for n in ts}
        target, n, warm = "decode_hf", 30, 5
    probed = _wrap("plain_" + target, steps[target])
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def window(before):
        before()
        s.record()
        probed()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1000

    prep = _window_prep(torch)

    def prereg_like():
        prep(ts[target])

    def others_then(before):
        def f():
            for k, st in steps.items():
                if k != target:
                    st()
            torch.cuda.synchronize()
            before()
        return f

    results = []
    for name, before in (("hot", lambda: None), ("hot, synced", torch.cuda.synchronize),
                         ("prereg-like window", prereg_like),
                         ("interleaved with the other arms", others_then(prereg_like)),
                         ("interleaved, gc off", others_then(prereg_like))):
        if "gc off" in name:
            gc.disable()
        calls = _LOG["arms"]["plain_" + target]["calls"]
        start = len(calls)
        ev = [window(before) for _ in range(warm + n)][warm:]
        host = calls[start + warm:]
        gc.enable()
        results.append({"regime": name, "n": n,
                        "events_us_median": round(statistics.median(ev), 1),
                        "events_us_min": round(min(ev), 1), "events_us_max": round(max(ev), 1),
                        "host_wall_us_median": _median_us(host, 0),
                        "host_cpu_us_median": _median_us(host, 1),
                        "gc_in_step": sum(c[2] for c in host),
                        "gc_us_in_step": round(sum(c[3] for c in host), 1)})
        print(json.dumps(results[-1]), flush=True)
    with open(out_path, "w") as f:
        json.dump({"kind": kind, "facts": facts(), "threads": _threads(), "torch": torch.__version__,
                   "python": sys.version, "executable": sys.executable,
                   "gc_objects": len(gc.get_objects()), "results": results}, f, indent=1)


def _plain_cpu(out_path):
    """pybench alone on the cpu device (no torch): what the interpreter costs, nothing else."""
    import numpy as np
    t = types.SimpleNamespace(rows=128, cols=1024, dtype="fp32", eps=1e-5, pass_="fwd", device="cpu",
                              operation="layernorm", options={})
    rng = np.random.default_rng(1)
    t.x = rng.standard_normal((128, 1024)).astype(np.float32)
    t.gamma = rng.standard_normal(1024).astype(np.float32)
    t.beta = rng.standard_normal(1024).astype(np.float32)
    t.y = np.empty((128, 1024), np.float32)
    st = _wrap("plain_pybench", _pybench_step(t))
    for _ in range(220):
        st()
    calls = _LOG["arms"]["plain_pybench"]["calls"][-200:]
    res = {"micro": "pybench (cpu)", "loop_us_median": statistics.median(_LOG["pybench_loop_us"][-200:]),
           "host_wall_us_median": _median_us(calls, 0),
           "host_cpu_us_median": _median_us(calls, 1), "executable": sys.executable}
    print(json.dumps(res), flush=True)
    with open(out_path, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    if sys.argv[1] == "micro-cpu":
        _plain_cpu(sys.argv[2])
    else:
        _plain(sys.argv[1], sys.argv[2])
