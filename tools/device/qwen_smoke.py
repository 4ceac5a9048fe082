#!/usr/bin/env python3
"""Setup smoke test of kernels/python/qwen_decode.py on a GPU, outside prereg, timing nothing.

For each arm function: builds a `t` like prereg's (torch tensors on a side stream made current,
rmsnorm 1 x 896 fp16, NaN-poisoned y), calls the function (model build, logits check, cache
prefill, graph capture, compilation), runs the step twice with fresh inputs, synchronises,
and checks t.y against a float64 RMSNorm with prereg's rule (|got - ref| <= atol + rtol
max|ref|, fp16: 1e-2 and 1e-2 here as a loose smoke bound). Profiled arms also report which
region labels they marked. Prints one line per arm: ok / FAIL with the exception's last line.
No times are printed, so running it does not inform the frozen predictions.
Usage: python3 tools/device/qwen_smoke.py [function ...]
"""
import importlib.util
import os
import sys
import traceback
import types

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("qwen_decode", os.path.join(ROOT, "kernels/python/qwen_decode.py"))
q = importlib.util.module_from_spec(spec)
spec.loader.exec_module(q)


class Regions:
    def __init__(self):
        self.labels = set()

    def region(self, label):
        rec = self

        class R:
            def __enter__(self):
                rec.labels.add(label)

            def __exit__(self, *a):
                return False
        return R()


def make_t(profile):
    t = types.SimpleNamespace()
    t.x = (torch.rand(1, 896, device="cuda") * 2 - 1).half()
    t.gamma = (torch.rand(896, device="cuda") + 0.5).half()
    t.y = torch.full((1, 896), float("nan"), device="cuda", dtype=torch.float16)
    t.rstd = None
    t.rows, t.cols, t.dtype, t.eps = 1, 896, "fp16", 1e-6
    t.pass_, t.device, t.operation = "fwd", "cuda", "rmsnorm"
    t.options = {"profile": 1.0} if profile else {}
    rec = Regions()
    t.region, t.rec = rec.region, rec
    return t


def ok_y(t):
    x = t.x.double()
    ref = x / torch.sqrt((x * x).mean(-1, keepdim=True) + t.eps) * t.gamma.double()
    err = (t.y.double() - ref).abs().max().item()
    return err <= 1e-2 + 1e-2 * ref.abs().max().item(), err


ARMS = [("decode_hf", 0), ("decode_fused", 0), ("decode_graph", 0), ("decode_compiled", 0),
        ("decode_hf", 1), ("decode_fused", 1), ("prefill_hf", 0), ("prefill_fused", 0),
        ("generate_hf", 0), ("generate_fused", 0)]
want = set(sys.argv[1:])
torch.cuda.set_stream(torch.cuda.Stream())
failed = 0
for fn, profile in ARMS:
    if want and fn not in want:
        continue
    name = fn + (" (profile)" if profile else "")
    try:
        t = make_t(profile)
        step = getattr(q, fn)(t)
        for _ in range(2):
            t.x.copy_((torch.rand(1, 896, device="cuda") * 2 - 1).half())
            t.gamma.copy_((torch.rand(896, device="cuda") + 0.5).half())
            t.y.fill_(float("nan"))
            step()
        torch.cuda.synchronize()
        good, err = ok_y(t)
        extra = f", regions {sorted(t.rec.labels)}" if profile else ""
        print(f"{'ok' if good else 'FAIL'} {name}: t.y max error {err:.3g}{extra}")
        failed += 0 if good else 1
    except Exception as e:  # noqa: BLE001
        failed += 1
        print(f"FAIL {name}: {traceback.format_exception_only(type(e), e)[-1].strip()}")
sys.exit(1 if failed else 0)
