#!/usr/bin/env python3
"""prereg's check of what a Python step returns (runner/arms/python_glue.py, `outputs`;
docs/python-arms.md, "Outputs"): only exact numpy arrays of numbers (CPU) and exact dense torch
tensors on the protocol's device pass, checked by type alone so that none of the arm's code runs;
objects numpy converts later (__array__), subclasses, dict subclasses and object arrays raise
TypeError. A fake torch stands in for the real one. No prereg binary: the glue's source is run as
a module."""
import os
import sys
import types

import numpy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
glue = types.ModuleType("prereg_glue")
exec(compile(open(os.path.join(ROOT, "runner/arms/python_glue.py")).read(), "python_glue.py", "exec"),
     glue.__dict__)

failures = 0


def check(cond, what):
    global failures
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures += 1


def raises(fn, text):
    try:
        fn()
    except TypeError as e:
        return text in str(e)
    return False


class Lazy:
    """What the attack returned: numpy converts it only when asked, after the window."""
    calls = 0

    def __array__(self, dtype=None, copy=None):
        Lazy.calls += 1
        return numpy.zeros(4)


class Sub(numpy.ndarray):
    pass


class LazyDict(dict):
    def items(self):
        Lazy.calls += 1
        return super().items()


a = numpy.ones(4, dtype=numpy.float32)
check(glue.outputs(None, 0) is None, "None passes (outputs written in place)")
kept = glue.outputs({"y": a}, 0)
check(kept == {"y": a} and kept["y"] is a, "an exact numpy.ndarray passes, the same object")
check(glue.outputs({"y": a}, 0) is not glue.outputs({"y": a}, 0), "a new dict every time: the "
      "step's own dict can change later without effect")
check(raises(lambda: glue.outputs({"y": Lazy()}, 0), "returned y as a __main__.Lazy")
      or raises(lambda: glue.outputs({"y": Lazy()}, 0), "returned y as a Lazy"),
      "an object with __array__ is refused")
check(Lazy.calls == 0, "... without calling it")
check(raises(lambda: glue.outputs({"y": a.view(Sub)}, 0), "not exactly a numpy.ndarray"),
      "an ndarray subclass is refused")
objects = numpy.empty(1, dtype=object)
objects[0] = Lazy()
check(raises(lambda: glue.outputs({"y": objects}, 0), "of object"), "an object array is refused")
check(raises(lambda: glue.outputs(LazyDict(y=a), 0), "not None or a dict"), "a dict subclass is refused")
check(Lazy.calls == 0, "... without calling its items()")
check(raises(lambda: glue.outputs([a], 0), "not None or a dict"), "a list is refused")
check(raises(lambda: glue.outputs({1: a}, 0), "a key of type int"), "a key that is not a str is refused")
check(raises(lambda: glue.outputs({"y": a}, 1), "not exactly a torch.Tensor"),
      "on CUDA a numpy array is refused")


# --- a fake torch: the real class check is `type(v) is torch.Tensor` -----------------------
class FakeTensor:
    def __init__(self, device, layout="strided"):
        self.device = types.SimpleNamespace(type=device, __str__=lambda: device)
        self.layout = layout


class FakeSub(FakeTensor):
    pass


torch = types.ModuleType("torch")
torch.Tensor = FakeTensor
torch.strided = "strided"
sys.modules["torch"] = torch
check(glue.outputs({"y": FakeTensor("cuda")}, 1)["y"].device.type == "cuda",
      "on CUDA an exact torch.Tensor on cuda passes")
check(raises(lambda: glue.outputs({"y": FakeTensor("cpu")}, 1), "not a dense tensor on cuda"),
      "on CUDA a CPU tensor is refused")
check(raises(lambda: glue.outputs({"y": FakeTensor("cuda", "sparse_coo")}, 1), "not a dense"),
      "a sparse tensor is refused")
check(raises(lambda: glue.outputs({"y": FakeSub("cuda")}, 1), "not exactly a torch.Tensor"),
      "a torch.Tensor subclass is refused")
check(raises(lambda: glue.outputs({"y": FakeTensor("xla")}, 1), "not a dense tensor on cuda"),
      "a tensor of a lazy device is refused")
check(glue.outputs({"y": FakeTensor("cpu")}, 0)["y"].device.type == "cpu",
      "on the CPU an exact CPU torch.Tensor passes")

print(f"{failures} failed")
sys.exit(1 if failures else 0)
