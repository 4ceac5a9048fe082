# Malformed operation declarations for tests/e2e/outside_operation.sh (docs/operations.md,
# "Bad input"). `misbehaving` is well formed; its reference misbehaves by the shape's rows.
import numpy as np


def double(t):
    return {"y": 2.0 * t.x}


def misbehaving_reference(t):  # right at 1 row (the dry run's shape), wrong at 2 to 6
    rows = t.rows
    if rows == 2:
        raise ZeroDivisionError("planted failure")
    if rows == 3:
        return {"y": 2.0 * t.x[:, :-1]}
    if rows == 4:
        return {"y": (2.0 * t.x).astype(np.float32)}
    if rows == 5:
        y = 2.0 * t.x
        y[1, 2] = np.nan
        return {"y": y}
    if rows == 6:
        misbehaving_reference.calls = getattr(misbehaving_reference, "calls", 0) + 1
        return {"y": 2.0 * t.x + misbehaving_reference.calls}
    return {"y": 2.0 * t.x}


def good(role="input", dim="cols", bytes_="2 * rows * cols * s", reference=double):
    return {
        "axes": ["rows", "cols"],
        "tensors": [
            {"name": "x", "role": role, "dims": ["rows", dim], "passes": ["fwd"],
             "dist": {"lo": -1, "hi": 1}},
            {"name": "y", "role": "output", "dims": ["rows", "cols"], "passes": ["fwd"]},
        ],
        "passes": {"fwd": {"bytes": bytes_, "flops": "rows * cols"}},
        "reference": reference,
    }


doubled = good()
bad_role = good(role="inout")
bad_dim = good(dim="depth")
bad_bytes = good(bytes_="2 * rows * width * s")
misbehaving = good(reference=misbehaving_reference)

other_axes = good()
other_axes["axes"] = ["m", "n"]
for _t in other_axes["tensors"]:
    _t["dims"] = ["m", "n"]
other_axes["passes"] = {"fwd": {"bytes": "2 * m * n * s"}}

import os  # noqa: E402

# Its declaration reads the environment: frozen with one eps, run with another.
drifting = good()
drifting["eps"] = float(os.environ.get("PREREG_TEST_EPS", "0"))
