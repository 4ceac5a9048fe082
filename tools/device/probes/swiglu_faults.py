# Planted faulty arms of the swiglu operation file (examples/operations/swiglu.py) for
# tools/device/probes/swiglu_faults.yaml: the operation file's torch float64 reference now stays
# on the device and is compared there (docs/engine.md, "What is computed where"); each arm below
# must still fail the gate (or a spot check of its timed samples) with the message named.
import torch
import torch.nn.functional as F


def honest(t):
    def step():
        torch.mul(F.silu(t.a), t.b, out=t.y)
    return step


def wrong(t):  # y = a * b: "y: element I (row R, col C) is GOT, reference REF ..."
    def step():
        torch.mul(t.a, t.b, out=t.y)
    return step


def lazy(t):  # writes only the first row: "y: unwritten (still poison) at element N ..."
    def step():
        torch.mul(F.silu(t.a[:1]), t.b[:1], out=t.y[:1])
    return step


def caching(t):  # computes once per bound buffer set, then returns: a spot check finds it
    done = []

    def step():
        if not done:
            torch.mul(F.silu(t.a), t.b, out=t.y)
            done.append(True)
        else:
            t.y.copy_(t.y)  # keeps whatever the window left there (the poison)
    return step
