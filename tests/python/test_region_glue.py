#!/usr/bin/env python3
"""prereg's Python glue for named regions (runner/arms/python_glue.py) with a fake
torch: CUDA events per region, and with the kernel clock the region marks queued through the
C function prereg hands the binding (docs/python-arms.md, "Kernel time per region"). No GPU,
no torch, no prereg binary: the glue's source file is run as a module."""
import ctypes
import json
import os
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GLUE = os.path.join(ROOT, "runner/arms/python_glue.py")
src = open(GLUE).read()

failures = 0


def check(cond, what):
    global failures
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures += 1


# --- a fake torch: events that read a fake device clock, a stream, capture on/off ---------
log = []
clock = [0.0]
capturing = [False]


class FakeEvent:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        clock[0] += 1.0
        self.t = clock[0]
        log.append("event")

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return other.t - self.t


torch = types.ModuleType("torch")
torch.cuda = types.SimpleNamespace(
    Event=FakeEvent,
    is_current_stream_capturing=lambda: capturing[0],
    current_stream=lambda: types.SimpleNamespace(cuda_stream=0x1234),
)
sys.modules["torch"] = torch

glue = types.ModuleType("prereg_glue_under_test")
exec(compile(src, GLUE, "exec"), glue.__dict__)

# --- the mark function, as prereg's would be: int mark(int open, void *stream) -------------
MARK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
fail_marks = [False]
streams = []


def py_mark(open_, stream):
    log.append("open" if open_ else "close")
    streams.append(stream)
    return 1 if fail_marks[0] else 0


mark = MARK(py_mark)
mark_ptr = ctypes.cast(mark, ctypes.c_void_p).value


def regions(cuda, ptr=0):
    return glue._Regions(cuda, ptr)


# 1. kernel clock on: marks bracket the events, labels kept in entry order
rec = regions(True, mark_ptr)
log.clear()
with rec.region("attention"):
    with rec.region("rmsnorm"):
        pass
with rec.region("attention"):
    pass
check(log == ["open", "event", "open", "event", "event", "close", "event", "close",
              "open", "event", "event", "close"],
      f"marks outside the events, innermost closed first: {log}")
check(all(s == 0x1234 for s in streams), "marks go to torch's current stream")
out = json.loads(glue.regions_take(rec))
check(out["order"] == ["attention", "rmsnorm", "attention"], f"entry order: {out['order']}")
check(abs(out["ms"]["attention"] - (3.0 + 1.0)) < 1e-9 and abs(out["ms"]["rmsnorm"] - 1.0) < 1e-9,
      f"event times summed per label: {out['ms']}")
check(glue.regions_take(rec) is None, "taken once: nothing left")

# 2. a window's reset clears what a warm-up left
with rec.region("mlp"):
    pass
glue.regions_reset(rec)
check(glue.regions_take(rec) is None, "regions_reset forgets marks and order")

# 3. without the clock: events only, no marks, an empty order
rec = regions(True, 0)
log.clear()
with rec.region("mlp"):
    pass
out = json.loads(glue.regions_take(rec))
check(log == ["event", "event"], f"no marks without the clock: {log}")
check(out["order"] == [] and list(out["ms"]) == ["mlp"], f"order empty: {out}")

# 4. inside a capture: no events, no marks, no region
rec = regions(True, mark_ptr)
capturing[0] = True
log.clear()
with rec.region("mlp"):
    pass
capturing[0] = False
check(log == [] and glue.regions_take(rec) is None, "a captured region marks nothing")

# 5. a mark that cannot be queued is an error of the arm, not a silent gap
fail_marks[0] = True
try:
    with rec.region("mlp"):
        pass
    check(False, "a failed mark raises")
except RuntimeError as e:
    check("region mark could not be queued" in str(e), f"a failed mark raises: {e}")
fail_marks[0] = False
glue.regions_reset(rec)

# 6. the CPU: perf_counter, never a mark
rec = regions(False, mark_ptr)
log.clear()
with rec.region("stats"):
    pass
out = json.loads(glue.regions_take(rec))
check(log == [] and out["order"] == [] and out["ms"]["stats"] >= 0.0, f"CPU regions: {out}")

# 7. a bad label is refused before anything is queued
log.clear()
try:
    rec.region("no spaces")
    check(False, "a bad label raises")
except ValueError:
    check(log == [], "a bad label raises ValueError and queues nothing")

print(f"{failures} failed")
sys.exit(1 if failures else 0)
