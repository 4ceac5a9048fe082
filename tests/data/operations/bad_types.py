# Declarations with a bad element type, fill or 0-dim tensor, each refused at `check` (exit 2;
# tests/e2e/typed_ops.sh, docs/operations.md "Element types").


def reference(t):
    return {}


rc = ["rows", "cols"]


def op(ids, y=None, tolerance=None, x=None):
    """table [cols] (an input), ids (the case's), y [rows] output."""
    return {"axes": rc,
            "tensors": [x or {"name": "table", "role": "input", "dims": ["cols"], "passes": ["fwd"],
                              "dist": {"lo": -1, "hi": 1}},
                        ids,
                        y or {"name": "y", "role": "output", "dims": ["rows"], "passes": ["fwd"]}],
            "passes": {"fwd": {}}, "tolerance": tolerance or {}, "reference": reference}


def ids(element="int64", dist=None, dims=("rows",)):
    return {"name": "ids", "role": "input", "dims": list(dims) if isinstance(dims, tuple) else dims,
            "element": element, "passes": ["fwd"], "dist": dist or {"index_of": ["table", "cols"]}}


range_outside = op(ids("int8", {"int": [0, 300]}))
index_past = op(ids(dist={"index_of": ["table", "rows"]}))
unknown_dtype = op(ids("int16"))
scalar_dims = op(ids(dims="scalar"))
fp8_untolerated = op(ids(), y={"name": "y", "role": "output", "dims": ["rows"],
                               "element": "fp8_e4m3", "passes": ["fwd"]})
fp8_outside = op(ids(), x={"name": "x", "role": "input", "dims": ["cols"], "element": "fp8_e4m3",
                           "passes": ["fwd"], "dist": {"lo": -1000, "hi": 1000}})
range_at_shape = op(ids("int8", {"int": [0, "cols"]}))
