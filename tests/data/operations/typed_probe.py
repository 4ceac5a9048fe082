# Probe operations of every element type (tests/e2e/typed_ops.sh; docs/operations.md, "Element
# types"): each integer and bool input is copied to an output of its type, a 0-dim int64 output
# counts, a 0-dim fp32 output is a norm. `probe_fp8` adds an e4m3 and an e5m2 tensor (copied).


def _reference(t):
    import numpy as np
    out = {"o_i8": t.a_i8.astype(np.float64), "o_u8": t.a_u8.astype(np.float64),
           "o_i32": t.a_i32.astype(np.float64), "o_i64": t.a_i64.astype(np.float64),
           "o_b": t.a_b.astype(np.float64),
           "total": np.float64(t.a_i32.sum()),  # a 0-dim integer: the sum of a_i32
           "norm": np.sqrt((t.x ** 2).sum())}   # a 0-dim fp32: the norm of x
    if getattr(t, "f4", None) is not None:
        out["o_f4"] = t.f4.copy()
        out["o_f5"] = t.f5.copy()
    return out


reference = _reference
rc = ["rows", "cols"]
_tensors = [
    {"name": "x", "role": "input", "dims": rc, "passes": ["fwd"], "dist": {"lo": -1, "hi": 1}},
    {"name": "a_i8", "role": "input", "dims": ["rows"], "element": "int8", "passes": ["fwd"],
     "dist": {"int": [-100, 100]}},
    {"name": "a_u8", "role": "input", "dims": ["rows"], "element": "uint8", "passes": ["fwd"],
     "dist": {"int": [0, 200]}},
    {"name": "a_i32", "role": "input", "dims": rc, "element": "int32", "passes": ["fwd"],
     "dist": {"int": [-1000, "cols"]}},
    {"name": "a_i64", "role": "input", "dims": ["rows"], "element": "int64", "passes": ["fwd"],
     "dist": {"index_of": ["x", "cols"]}},
    {"name": "a_b", "role": "input", "dims": ["rows"], "element": "bool", "passes": ["fwd"],
     "dist": {"int": [0, 2]}},
    {"name": "o_i8", "role": "output", "dims": ["rows"], "element": "int8", "passes": ["fwd"]},
    {"name": "o_u8", "role": "output", "dims": ["rows"], "element": "uint8", "passes": ["fwd"]},
    {"name": "o_i32", "role": "output", "dims": rc, "element": "int32", "passes": ["fwd"]},
    {"name": "o_i64", "role": "output", "dims": ["rows"], "element": "int64", "passes": ["fwd"]},
    {"name": "o_b", "role": "output", "dims": ["rows"], "element": "bool", "passes": ["fwd"]},
    {"name": "total", "role": "output", "dims": [], "element": "int64", "passes": ["fwd"]},
    {"name": "norm", "role": "output", "dims": [], "element": "fp32", "passes": ["fwd"]},
]
_bytes = ("rows * cols * s + rows * (s_a_i8 + s_a_u8 + s_a_i64 + s_a_b) + rows * cols * s_a_i32"
          " + rows * (s_o_i8 + s_o_u8 + s_o_i64 + s_o_b) + rows * cols * s_o_i32 + s_total + s_norm")

probe = {
    "summary": "every integer and bool type copied, a 0-dim count and a 0-dim norm",
    "axes": rc,
    "tensors": _tensors,
    "passes": {"fwd": {"bytes": _bytes, "flops": "2 * rows * cols"}},
    "tolerance": {"fp32": {"rtol": 1e-5, "atol": 0}},
    "reference": reference,
}

probe_fp8 = {
    "summary": "probe, and an e4m3 and an e5m2 tensor copied",
    "axes": rc,
    "tensors": _tensors + [
        {"name": "f4", "role": "input", "dims": rc, "element": "fp8_e4m3", "passes": ["fwd"],
         "dist": {"lo": -448, "hi": 448}},
        {"name": "f5", "role": "input", "dims": rc, "element": "fp8_e5m2", "passes": ["fwd"],
         "dist": {"lo": -0.01, "hi": 0.01}},
        {"name": "o_f4", "role": "output", "dims": rc, "element": "fp8_e4m3", "passes": ["fwd"]},
        {"name": "o_f5", "role": "output", "dims": rc, "element": "fp8_e5m2", "passes": ["fwd"]},
    ],
    "passes": {"fwd": {"bytes": _bytes + " + 2 * rows * cols * (s_f4 + s_f5)",
                       "flops": "2 * rows * cols"}},
    "tolerance": {"fp32": {"rtol": 1e-5, "atol": 0}, "fp8_e4m3": {"rtol": 0, "atol": 0},
                  "fp8_e5m2": {"rtol": 0, "atol": 0}},
    "reference": reference,
}
