# An embedding lookup (docs/operations.md, "The LLM step's operations"): the first operation of a
# decoder step, rows of a table gathered by int64 token ids.
#
#   y[i, :] = table[ids[i], :]
#
# table [vocab, dim] and y [tokens, dim] are the protocol's dtype; ids [tokens] are int64 drawn as
# indices into the table's rows (`index_of`: uniform in [0, vocab)). A gather is exact, so the
# tolerance is exact too.
#
# bytes (minimum traffic): the rows looked up read once each (tokens dim, duplicates counted as
# read again), the ids, y written once. flops: none (0).


def _on_device(t, torch):
    """Input by name as a tensor on the GPU (float64, or int64 for an integer input): prereg's own
    copy there (t.on_device, no trip through the host) or the numpy copy moved there."""
    ond = getattr(t, "on_device", None)
    if ond is not None:
        return lambda n: getattr(ond, n)
    return lambda n: torch.from_numpy(getattr(t, n)).to("cuda")


def reference(t):
    """float64 y [tokens, dim]."""
    if t.device == "cuda":
        import torch
        get = _on_device(t, torch)
        return {"y": get("table")[get("ids")]}
    return {"y": t.table[t.ids]}


embedding = {
    "summary": "y = table[ids]: rows of table [vocab, dim] gathered by int64 ids [tokens]",
    "axes": ["tokens", "vocab", "dim"],
    "tensors": [
        {"name": "table", "role": "input", "dims": ["vocab", "dim"], "passes": ["fwd"],
         "dist": {"lo": -1, "hi": 1}},
        {"name": "ids", "role": "input", "dims": ["tokens"], "element": "int64",
         "passes": ["fwd"], "dist": {"index_of": ["table", "vocab"]}},
        {"name": "y", "role": "output", "dims": ["tokens", "dim"], "passes": ["fwd"]},
    ],
    "passes": {
        "fwd": {"bytes": "2 * tokens * dim * s + tokens * s_ids", "flops": "0"},
    },
    "tolerance": {"fp32": {"rtol": 0, "atol": 0},
                  "fp16": {"rtol": 0, "atol": 0},
                  "bf16": {"rtol": 0, "atol": 0}},
    "reference": reference,
}
