# Planted mistakes that `prereg check` and `prereg freeze` must refuse by their dry run
# (docs/engine.md, "The dry run"; tests/e2e/dry_run.sh): two operation declarations whose
# reference is wrong and three numpy arms that are, of the row-wise L2 normalisation of
# examples/walkthrough/l2norm.py.
import numpy as np


def good_reference(t):
    return {"y": t.x / np.sqrt((t.x * t.x).sum(axis=1, keepdims=True) + t.eps)}


def reference_out(t):  # the wrong key: `out`, not `y`
    return {"out": t.x / np.sqrt((t.x * t.x).sum(axis=1, keepdims=True) + t.eps)}


def reference_norms(t):  # the wrong shape: the row norms, not the normalised rows
    return {"y": np.sqrt((t.x * t.x).sum(axis=1, keepdims=True) + t.eps)}


def declaration(reference):
    return {
        "axes": ["rows", "cols"],
        "eps": 1e-12,
        "tensors": [
            {"name": "x", "role": "input", "dims": ["rows", "cols"], "passes": ["fwd"],
             "dist": {"lo": -1, "hi": 1}},
            {"name": "y", "role": "output", "dims": ["rows", "cols"], "passes": ["fwd"]},
        ],
        "passes": {"fwd": {"bytes": "2 * rows * cols * s"}},
        "reference": reference,
    }


l2norm = declaration(good_reference)
l2norm_out = declaration(reference_out)
l2norm_norms = declaration(reference_norms)


def correct(t):
    def step():
        t.y[...] = t.x / np.sqrt((t.x * t.x).sum(axis=1, keepdims=True) + t.eps)
    return step


def closure_bug(t):  # `norms` is assigned in step, so step's first read of it fails
    norms = None

    def step():
        if norms is None:
            norms = np.sqrt((t.x * t.x).sum(axis=1, keepdims=True) + t.eps)
        t.y[...] = t.x / norms
    return step


def wrong_name(t):  # the operation's output is y
    def step():
        t.out[...] = t.x / np.sqrt((t.x * t.x).sum(axis=1, keepdims=True) + t.eps)
    return step


def forgot_sqrt(t):  # divides by the sum of squares, not its square root
    def step():
        t.y[...] = t.x / ((t.x * t.x).sum(axis=1, keepdims=True) + t.eps)
    return step
