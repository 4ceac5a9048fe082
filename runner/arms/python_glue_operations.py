# Operation files in prereg's Python glue (docs/operations.md, "The operation file"): loaded,
# described and their float64 reference called on the host or the device. Compiled into prereg
# as text after python_glue.py, in the same namespace (cmake/embed_text.cmake).

# --- operation files (docs/operations.md, "The operation file") -------------------------------

_op_modules = {}

def _op_module(path):
    mod = _op_modules.get(path)
    if mod is None:
        name = f"prereg_operation_{len(_op_modules)}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        _op_modules[path] = mod
    return mod

def _where(exc, path):
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if _same_file(f.filename, path)]
    if isinstance(exc, SyntaxError) and _same_file(exc.filename, path) and exc.lineno:
        lines = [exc.lineno]
    return f" (line {lines[-1]})" if lines else ""

def operation_describe(path, name):
    """("ok", the declaration `name` of the operation file as JSON, its reference replaced by the
    function's name) or (kind, one line): kind "environment" (a module the file imports is not
    installed here) or "code"."""
    import json
    try:
        mod = _op_module(path)
    except BaseException as exc:
        kind = "environment" if isinstance(exc, ModuleNotFoundError) else "code"
        return (kind, f"the file does not import: {describe(exc)}{_where(exc, path)}")
    d = getattr(mod, name, None)
    if d is None:
        names = sorted(n for n, v in vars(mod).items() if isinstance(v, dict) and not n.startswith("_"))
        return ("code", f"the file declares no {name} (its dicts: {', '.join(names) or 'none'})")
    if not isinstance(d, dict):
        return ("code", f"{name} is a {type(d).__name__}, not a dict")
    out = dict(d)
    ref = out.get("reference")
    if "reference" in out:
        if not callable(ref):
            return ("code", f"reference is a {type(ref).__name__}, not a function")
        out["reference"] = getattr(ref, "__name__", "reference")
    out["name"] = name
    try:
        return ("ok", json.dumps(out, allow_nan=False, sort_keys=True))
    except (TypeError, ValueError) as exc:
        return ("code", f"the declaration is not plain data (strings, numbers, lists, dicts): {describe(exc)}")

def _integral_fault(v, name, kind, xp):
    """Why the float64 values `v` of an integer or bool output are not ones it can hold: kind is
    [type, least, largest] (docs/operations.md, "Element types"), or ""."""
    if kind is None:
        return ""
    flat = v.reshape(-1)
    bad = xp.nonzero((flat != xp.round(flat)) | (flat < kind[1]) | (flat > kind[2]))
    bad = bad[0] if isinstance(bad, tuple) else bad.reshape(-1)
    if len(bad):
        i = int(bad[0])
        return (f"returned {name} with {float(flat[i])!r} at element {i}, which {kind[0]} {name} "
                f"cannot hold (its values: {kind[1]:.17g} to {kind[2]:.17g})")
    return ""

def _as_float64(v, name, shape, kind=None):
    import numpy
    if isinstance(v, (numpy.generic, int, float, bool)) and not shape:
        v = numpy.asarray(v)  # a 0-dim output returned as a scalar
    if hasattr(v, "detach") and hasattr(v, "cpu"):  # a torch tensor
        if kind is not None and not v.is_floating_point() and not v.is_complex():
            v = v.detach().cpu().double()
        if str(v.dtype) != "torch.float64":
            return None, f"returned {name} as {v.dtype}, not float64"
        v = v.detach().cpu().numpy()
    if not isinstance(v, numpy.ndarray):
        return None, f"returned {name} as a {type(v).__name__}, not an array"
    if kind is not None and v.dtype.kind in "iub":
        v = v.astype(numpy.float64)
    if v.dtype != numpy.float64:
        return None, f"returned {name} as {v.dtype}, not float64"
    if tuple(v.shape) != tuple(shape):
        return None, f"returned {name} of shape {tuple(v.shape)}, not {tuple(shape)}"
    bad = numpy.flatnonzero(~numpy.isfinite(v))
    if bad.size:
        return None, f"returned {name} with {v.reshape(-1)[bad[0]]} at element {bad[0]}"
    why = _integral_fault(v, name, kind, numpy)
    return (None, why) if why else (v, "")

def _host_view(addr, shape):
    import ctypes, numpy
    n = 1
    for d in shape:
        n *= d
    if n == 0:
        return numpy.zeros(shape)
    return numpy.ctypeslib.as_array((ctypes.c_double * n).from_address(addr)).reshape(shape)

class _CudaInput:
    """A checked call's input where it lies in device memory (__cuda_array_interface__ v3; 16-bit
    floats as uint16, viewed as their torch type after). Written and synchronized by prereg."""
    _TYPESTR = {"fp32": "<f4", "fp16": "<f2", "bf16": "<u2", "fp8_e4m3": "|u1", "fp8_e5m2": "|u1",
                "int8": "|i1", "uint8": "|u1", "int32": "<i4", "int64": "<i8", "bool": "|u1"}

    def __init__(self, addr, shape, dtype):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": self._TYPESTR[dtype],
                                         "data": (addr, False), "version": 3, "strides": None,
                                         "stream": None}


def _device_inputs(m):
    """{name: float64 torch tensor on the run's device}: a fresh float64 copy of each input, made
    on the device from prereg's buffer (docs/operations.md, "The reference")."""
    import torch
    device = torch.device("cuda", m["ordinal"])
    out = {}
    with torch.cuda.device(device):
        for k, (addr, shape, dtype) in m["inputs"].items():
            n = 1
            for d in shape:
                n *= d
            if n == 0:
                out[k] = torch.zeros(shape, dtype=torch.float64, device=device)
                continue
            raw = torch.as_tensor(_CudaInput(addr, shape, dtype), device=device)
            if dtype == "bf16":
                raw = raw.view(torch.bfloat16)
            elif dtype in ("fp8_e4m3", "fp8_e5m2"):
                raw = raw.view(torch.float8_e4m3fn if dtype == "fp8_e4m3" else torch.float8_e5m2)
            if dtype == "bool":  # integers as int64, bools as bool (docs/operations.md)
                out[k] = raw.to(torch.bool)
            elif dtype in ("int8", "uint8", "int32", "int64"):
                out[k] = raw.to(torch.int64)
            else:
                out[k] = raw.to(torch.float64)
    return out


class _ReferenceArgs(types.SimpleNamespace):
    """The reference's `t`. On the device path an input read by name (t.x) is a float64 numpy
    copy, made from the device on first use; t.on_device.x is the float64 torch tensor there."""

    def __getattr__(self, k):
        dev = self.__dict__.get("on_device")
        if dev is not None and k in vars(dev):
            v = getattr(dev, k).cpu().numpy()
            setattr(self, k, v)
            return v
        raise AttributeError(k)


def _reference_call(path, name, m):
    """The reference's dict for the call `m` describes (inputs: copies of prereg's float64
    buffers, or on the device path float64 copies on the device), or (None, why not)."""
    fn = getattr(_op_module(path), name)["reference"]
    t = _ReferenceArgs(rows=m["rows"], cols=m["cols"], axes=m["axes"], eps=m["eps"],
                       device=m["device"], operation=name, pass_=m["pass"], on_device=None)
    if m.get("where") == "device":
        t.on_device = types.SimpleNamespace(**{k: None for k in m["absent"]}, **_device_inputs(m))
    for k in m["absent"]:
        setattr(t, k, None)
    if m.get("where") != "device":
        kinds = m.get("kinds", {})
        for k, (addr, shape) in m["inputs"].items():
            v = _host_view(addr, shape).copy()
            if k in kinds:  # integer inputs as int64, bool ones as bool (docs/operations.md)
                import numpy
                v = v.astype(numpy.bool_ if kinds[k][0] == "bool" else numpy.int64)
            setattr(t, k, v)
    try:
        r = fn(t)
    except Exception as exc:
        return None, f"raised {describe(exc)}{_where(exc, path)}"
    if not isinstance(r, dict):
        return None, f"returned a {type(r).__name__}, not a dict of its outputs"
    for k in m["outputs"]:
        if k not in r:
            return None, f"returned no {k} (it returned {', '.join(sorted(map(str, r))) or 'nothing'})"
    return r, ""

def operation_reference(path, name, meta_json):
    """Runs the reference of declaration `name` once: inputs copied in from prereg's float64
    buffers, outputs validated (a dict; each expected output float64, of its shape, finite) and
    copied out. "" or why not, one line."""
    import json
    m = json.loads(meta_json)
    r, why = _reference_call(path, name, m)
    if why:
        return why
    kinds = m.get("kinds", {})
    for k, (addr, shape) in m["outputs"].items():
        v, why = _as_float64(r[k], k, shape, kinds.get(k))
        if why:
            return why
        if v.size:
            _host_view(addr, shape)[...] = v
    return ""

_device_outputs = {}
_device_handles = [0]

def _on_device(v, name, shape, device, kind=None):
    """Output `v` as a contiguous float64 torch tensor on `device`, checked as _as_float64 checks
    on the host (dtype, shape, every value finite, an integer output's values), or (None, why
    not)."""
    import numpy, torch
    if isinstance(v, (numpy.generic, int, float, bool)) and not shape:
        v = numpy.asarray(v)  # a 0-dim output returned as a scalar
    if isinstance(v, numpy.ndarray):
        if kind is not None and v.dtype.kind in "iub":
            v = v.astype(numpy.float64)
        if v.dtype != numpy.float64:
            return None, f"returned {name} as {v.dtype}, not float64"
        v = torch.from_numpy(v)
    elif not (hasattr(v, "detach") and hasattr(v, "cpu")):
        return None, f"returned {name} as a {type(v).__name__}, not an array"
    if kind is not None and not v.is_floating_point() and not v.is_complex():
        v = v.double()
    if v.dtype != torch.float64:
        return None, f"returned {name} as {v.dtype}, not float64"
    if tuple(v.shape) != tuple(shape):
        return None, f"returned {name} of shape {tuple(v.shape)}, not {tuple(shape)}"
    v = v.detach().to(device).contiguous()
    bad = torch.nonzero(~torch.isfinite(v.reshape(-1)))
    if bad.numel():
        i = int(bad[0])
        return None, f"returned {name} with {float(v.reshape(-1)[i])} at element {i}"
    why = _integral_fault(v, name, kind, torch)
    return (None, why) if why else (v, "")

def _device_call(path, name, m, device):
    """The outputs of one reference call on `device` by name, or (None, why not)."""
    r, why = _reference_call(path, name, m)
    if why:
        return None, why
    outs = {}
    kinds = m.get("kinds", {})
    for k in m["outputs"]:
        v, why = _on_device(r[k], k, m["outputs"][k][1], device, kinds.get(k))
        if why:
            return None, why
        outs[k] = v
    return outs, ""

def operation_reference_device(path, name, meta_json):
    """Runs the reference of declaration `name` (twice when meta's `twice`: the two must agree bit
    for bit, compared on the device) and keeps its outputs on the device as float64 tensors.
    ("" or why not, a handle for operation_reference_release, JSON {name: device address}); the
    handle is -1 when torch with CUDA is not importable here (prereg then uses the host's path)."""
    import json
    try:
        import torch
        usable = torch.cuda.is_available()
    except ImportError:
        usable = False
    if not usable:
        return ("", -1, "{}")
    m = json.loads(meta_json)
    device = torch.device("cuda", m["ordinal"])
    outs, why = _device_call(path, name, m, device)
    if not why and m["twice"]:
        again, why = _device_call(path, name, m, device)
        for k in ([] if why else m["order"]):
            a, b = outs[k].reshape(-1).view(torch.int64), again[k].reshape(-1).view(torch.int64)
            diff = torch.nonzero(a != b)
            if diff.numel():
                i = int(diff[0])
                why = (f"disagrees with itself across two calls: {k} element {i} is "
                       f"{float(outs[k].reshape(-1)[i]):.17g}, then "
                       f"{float(again[k].reshape(-1)[i]):.17g}")
                break
    if why:
        return (why, 0, "{}")
    torch.cuda.synchronize(device)  # ready before prereg's stream reads them
    _device_handles[0] += 1
    _device_outputs[_device_handles[0]] = outs
    return ("", _device_handles[0], json.dumps({k: str(v.data_ptr()) for k, v in outs.items()}))

def operation_reference_release(handle):
    """Lets go of the outputs of operation_reference_device's call `handle`."""
    _device_outputs.pop(handle, None)
