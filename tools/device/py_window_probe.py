"""Where the Python call path lands in a timed window: torch's layer_norm forward at 128x1024
fp32 timed with CUDA events under the orders prereg might use (flush, then the window at once;
flush, then torch's memory statistics, then the window; an idle GPU), on an external stream
made current as prereg does. Prints one JSON line per variant (median of 300, µs)."""
import json
import statistics
import torch
import torch.nn.functional as F

rows, cols = 128, 1024
side = torch.cuda.Stream()
torch.cuda.set_stream(torch.cuda.ExternalStream(side.cuda_stream))
x = torch.randn(rows, cols, device="cuda")
g = torch.randn(cols, device="cuda")
b = torch.randn(cols, device="cuda")
buf = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
step = lambda: {"y": F.layer_norm(x, (cols,), g, b, 1e-5)}


def run(name, before, reps=300):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for i in range(reps + 20):
        before()
        s.record()
        r = step()
        e.record()
        e.synchronize()
        if i >= 20:
            out.append(s.elapsed_time(e) * 1000)
    print(json.dumps({"variant": name, "median_us": round(statistics.median(out), 2)}), flush=True)


run("flush, window at once", lambda: buf.zero_())
run("flush, memory stats, window", lambda: (buf.zero_(), torch.cuda.reset_peak_memory_stats(),
                                           torch.cuda.memory_allocated()))
run("idle GPU", lambda: torch.cuda.synchronize())
run("idle GPU, memory stats", lambda: (torch.cuda.synchronize(), torch.cuda.reset_peak_memory_stats(),
                                       torch.cuda.memory_allocated()))
import time
t = time.perf_counter()
for _ in range(1000):
    torch.cuda.memory_allocated()
print(json.dumps({"memory_allocated_host_us": round((time.perf_counter() - t) * 1000, 2)}))
t = time.perf_counter()
for _ in range(1000):
    step()
torch.cuda.synchronize()
print(json.dumps({"step_host_us": round((time.perf_counter() - t) * 1000, 2)}))
