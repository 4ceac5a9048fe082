"""torch's own timing of the ops the peer arms time, for the Python call path's overhead.

For each shape: a fresh L2 flush (a 256 MiB write) before each call, CUDA events around one call
on the current stream, the median of N calls after a warm-up — the way triton.testing.do_bench
times a kernel — so the result is comparable with prereg's per-step median of the same op.
Prints one JSON object per line: op, pass, dtype, rows, cols, median_ms, n.

  python3 tools/device/torch_timing.py --rows 128 4096 65536 --cols 1024 --reps 200
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F


def flush(buf):
    buf.zero_()


def time_op(fn, reps, warmup, buf):
    for _ in range(warmup):
        flush(buf)
        fn()
    torch.cuda.synchronize()
    out = []
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        flush(buf)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end))
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=[128, 4096, 65536])
    ap.add_argument("--cols", type=int, nargs="+", default=[1024])
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "fp16", "bf16"])
    ap.add_argument("--op", default="layernorm", choices=["layernorm", "rmsnorm"])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    a = ap.parse_args()
    dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[a.dtype]
    buf = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for cols in a.cols:
        for rows in a.rows:
            x = torch.empty(rows, cols, device="cuda", dtype=dt).uniform_(-1, 1)
            g = torch.empty(cols, device="cuda", dtype=dt).uniform_(0.5, 1.5)
            b = torch.empty(cols, device="cuda", dtype=dt).uniform_(-0.5, 0.5)
            if a.op == "layernorm":
                fn = lambda: F.layer_norm(x, (cols,), g, b, 1e-5)
            else:
                fn = lambda: F.rms_norm(x, (cols,), g, 1e-6)
            ms = time_op(fn, a.reps, a.warmup, buf)
            print(json.dumps({"op": a.op, "pass": "fwd", "dtype": a.dtype, "rows": rows,
                              "cols": cols, "median_ms": ms, "n": a.reps}), flush=True)


if __name__ == "__main__":
    main()
