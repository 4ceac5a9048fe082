"""A plain events-and-flush harness for the peers of the LLM protocols (issue 44): the figures a
kernel engineer would get with triton.testing.do_bench's method, to set beside prereg's.

Each case is timed three ways on the current stream, after a warm-up:
  flush   a 256 MiB write before each call (do_bench's L2 flush), events around the call alone;
  b2b     back to back, no flush, events around each call (what a loop of calls sees);
  paced   flush, call, synchronize, then a 2 ms host pause before the next (about the spacing of
          prereg's samples, which read NVML and check outputs between windows).
Medians of N calls; the device's SM clock, power and clocks-event reasons (pynvml, where
importable) are read right after each mode, so a difference between modes can be put down to
the clock (power capping) or to the cache. The copy ceiling is measured the way prereg's
instrument counts it (a device-to-device copy of 2 GiB, bytes read plus bytes written).

  python3 tools/device/plain_harness.py [--reps 50] [--only gemm,sdpa,ce,swiglu] [--out FILE]
Prints one JSON object per line (case, mode, median_ms, rate, unit, clocks) and writes them to
FILE when given.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

try:
    import pynvml
    pynvml.nvmlInit()
    _NVML = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
except Exception:  # noqa: BLE001 - the harness runs without NVML, recording none
    _NVML = None


def device_state():
    if _NVML is None:
        return None
    return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(_NVML, pynvml.NVML_CLOCK_SM),
            "mem_mhz": pynvml.nvmlDeviceGetClockInfo(_NVML, pynvml.NVML_CLOCK_MEM),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(_NVML) / 1000.0,
            "temp_c": pynvml.nvmlDeviceGetTemperature(_NVML, pynvml.NVML_TEMPERATURE_GPU),
            "reasons": hex(pynvml.nvmlDeviceGetCurrentClocksEventReasons(_NVML))}


FLUSH = torch.empty(256 << 20, dtype=torch.int8, device="cuda")


def timed(fn, reps, mode):
    start = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    for i in range(reps):
        if mode != "b2b":
            FLUSH.zero_()
        start[i].record()
        fn()
        end[i].record()
        if mode == "paced":
            end[i].synchronize()
            time.sleep(0.002)
    torch.cuda.synchronize()
    ms = [s.elapsed_time(e) for s, e in zip(start, end)]
    return statistics.median(ms), device_state()


def copy_ceiling():
    n = 1 << 30  # elements of 2 bytes: 2 GiB read + 2 GiB written
    a = torch.empty(n, dtype=torch.bfloat16, device="cuda").uniform_(-1, 1)
    b = torch.empty_like(a)
    ms, _ = timed(lambda: b.copy_(a), 30, "flush")
    return 2 * a.numel() * a.element_size() / (ms * 1e-3) / 1e9  # GB/s


def cases(only, ceiling_gbps):
    out = []
    dev = "cuda"
    if "gemm" in only:
        for init in ("uniform", "randn"):
            m = n = k = 8192
            if init == "uniform":
                a = torch.empty(m, k, dtype=torch.bfloat16, device=dev).uniform_(-1, 1)
                b = torch.empty(k, n, dtype=torch.bfloat16, device=dev).uniform_(-1, 1)
            else:
                a = torch.randn(m, k, dtype=torch.bfloat16, device=dev)
                b = torch.randn(k, n, dtype=torch.bfloat16, device=dev)
            c = torch.empty(m, n, dtype=torch.bfloat16, device=dev)
            out.append((f"gemm_bf16_8192^3_{init}", lambda a=a, b=b, c=c: torch.matmul(a, b, out=c),
                        2 * m * n * k, "TFLOP/s"))
    if "sdpa" in only:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        q = torch.empty(4, 14, 4096, 64, dtype=torch.bfloat16, device=dev).uniform_(-3, 3)
        k = torch.empty(4, 2, 4096, 64, dtype=torch.bfloat16, device=dev).uniform_(-1, 1)
        v = torch.empty_like(k).uniform_(-1, 1)
        pairs = 4096 * 4096 - 4096 * 4095 // 2
        flops = 4 * 4 * 14 * 64 * pairs
        for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            def run(be=be):
                with sdpa_kernel(be):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            # flash has no GQA kernel in some builds: fall back to expanded kv heads, as the arm does
            try:
                run()
                fn = run
            except RuntimeError:
                ke, ve = k.repeat_interleave(7, 1), v.repeat_interleave(7, 1)

                def fn(be=be, ke=ke, ve=ve):
                    with sdpa_kernel(be):
                        return F.scaled_dot_product_attention(q, ke, ve, is_causal=True)
                name += "_expanded"
            out.append((f"sdpa_causal_prefill_4x14x4096_d64_{name}", fn, flops, "TFLOP/s"))
    if "ce" in only:
        rows, vocab = 4096, 151936
        x = torch.empty(rows, vocab, dtype=torch.bfloat16, device=dev).uniform_(-8, 8)
        tgt = (7919 * torch.arange(rows, device=dev) + 13) % vocab
        nbytes = rows * vocab * 2 + 12 * rows
        eager = lambda: F.cross_entropy(x.float(), tgt, reduction="none")  # noqa: E731
        compiled = torch.compile(lambda x, t: F.cross_entropy(x.float(), t, reduction="none"))
        out.append(("ce_fwd_4096x151936_eager", eager, nbytes, "%copy"))
        out.append(("ce_fwd_4096x151936_compiled", lambda: compiled(x, tgt), nbytes, "%copy"))
        try:
            from liger_kernel.transformers.functional import liger_cross_entropy
            out.append(("ce_fwd_4096x151936_liger",
                        lambda: liger_cross_entropy(x, tgt, reduction="none"), nbytes, "%copy"))
        except ImportError as e:
            print(json.dumps({"case": "ce_fwd_4096x151936_liger", "skipped": str(e)}))
    if "swiglu" in only:
        rows, cols = 4096, 4864
        a = torch.empty(rows, cols, dtype=torch.bfloat16, device=dev).uniform_(-4, 4)
        b = torch.empty_like(a).uniform_(-4, 4)
        f = torch.compile(lambda a, b: F.silu(a) * b)
        out.append(("swiglu_fwd_4096x4864_compiled", lambda: f(a, b), 3 * rows * cols * 2, "%copy"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--only", default="gemm,sdpa,ce,swiglu")
    ap.add_argument("--out")
    args = ap.parse_args()
    only = set(args.only.split(","))
    lines = []
    ceiling = copy_ceiling()
    lines.append({"case": "copy_ceiling", "gbps": round(ceiling, 1), "state": device_state()})
    print(json.dumps(lines[-1]), flush=True)
    for name, fn, work, unit in cases(only, ceiling):
        for mode in ("flush", "b2b", "paced"):
            ms, state = timed(fn, args.reps, mode)
            rate = work / (ms * 1e-3) / 1e12 if unit == "TFLOP/s" else \
                100.0 * work / (ms * 1e-3) / 1e9 / ceiling
            lines.append({"case": name, "mode": mode, "median_ms": round(ms, 5),
                          "rate": round(rate, 2), "unit": unit, "state": state})
            print(json.dumps(lines[-1]), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
