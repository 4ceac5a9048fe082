# The Python half of the bridge between prereg and a Python arm (docs/python-arms.md), run
# once in the embedded interpreter. Compiled into prereg as text (cmake/embed_text.cmake).
import sys, types, importlib.util, traceback

class _DL:
    """A DLPack producer around one capsule of prereg's buffers (consumed once)."""
    __slots__ = ("cap", "dev")
    def __init__(self, cap, dev):
        self.cap, self.dev = cap, dev
    def __dlpack__(self, stream=None, **kwargs):
        cap, self.cap = self.cap, None
        if cap is None:
            raise RuntimeError("prereg: a DLPack capsule was consumed twice")
        return cap
    def __dlpack_device__(self):
        return self.dev

_files = {}

def _same_file(a, b):
    import os
    return bool(a) and os.path.abspath(a) == os.path.abspath(b)

def _load_failure(exc, path, device_missing):
    """(kind, text) of an exception raised while the arm's file imported (docs/python-arms.md,
    "Loading"): "environment" when this machine lacks what the file needs, "device" when the
    protocol's device is missing here and the exception came from outside the file, else
    "code"."""
    frames = traceback.extract_tb(exc.__traceback__)
    here = bool(frames) and _same_file(frames[-1].filename, path)  # raised by the file's code
    lines = [f.lineno for f in frames if _same_file(f.filename, path)]
    first = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, SyntaxError):
        here = _same_file(exc.filename, path)
        first = exc.msg or first
        lines = [exc.lineno] if here and exc.lineno else []
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    if lines:
        text += f" (line {lines[-1]})"
    if isinstance(exc, ModuleNotFoundError):
        return "environment", text
    if isinstance(exc, (ImportError, OSError, SyntaxError)) and not here:
        return "environment", text
    if device_missing and not here:
        return "device", text
    return "code", text

def _defined_functions(mod):
    import inspect
    return sorted(n for n, v in vars(mod).items()
                  if not n.startswith("_") and inspect.isfunction(v)
                  and getattr(v, "__module__", None) == mod.__name__)

def _static_functions(path, function):
    """When the file cannot be imported here: the functions its source defines at its top level
    if `function` is bound nowhere in it (no def, class, assignment or import of that name, no
    star import, no globals()/setattr/__dict__), else None (it may well exist once imported)."""
    import ast
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except Exception:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == function:
                return None
        elif isinstance(node, ast.Name) and (node.id == function or node.id in ("globals", "setattr")):
            return None
        elif isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.name == "*" or (a.asname or a.name).split(".")[0] == function:
                    return None
    return sorted(n.name for n in tree.body
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_"))

def load(path, function, module_name, device_missing=0):
    """("ok", the function, "[]"), or (kind, one line, JSON list of the file's functions) with
    kind "environment", "device", "code" or "missing" (no such function)."""
    import json
    mod = _files.get(path)
    if mod is None:
        try:
            spec = importlib.util.spec_from_file_location(module_name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {path}")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = mod
            spec.loader.exec_module(mod)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt at import: the file's
            sys.modules.pop(module_name, None)
            kind, text = _load_failure(exc, path, device_missing)
            if kind != "code":  # not importable here: a name its source never binds is still a typo
                defined = _static_functions(path, function)
                if defined is not None:
                    return ("missing", "", json.dumps(defined))
            return (kind, text, "[]")
        _files[path] = mod
    fn = getattr(mod, function, None)
    if fn is None:
        return ("missing", "", json.dumps(_defined_functions(mod)))
    if not callable(fn):
        return ("code", f"{function} is a {type(fn).__name__}, not a function", "[]")
    return ("ok", fn, "[]")

def _numpy_view(cap):
    import numpy
    a = numpy.from_dlpack(_DL(cap, (1, 0)))
    if not a.flags.writeable:  # numpy < 2 marks DLPack imports read-only: same memory, writable
        a = numpy.ndarray(a.shape, a.dtype, buffer=(numpy.ctypeslib.as_array(
            (numpy.ctypeslib.ctypes.c_char * a.nbytes).from_address(
                a.__array_interface__["data"][0]))))
    return a

_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")

class _Region:
    """One `with t.region(label):` block: CUDA events on the current stream, or perf_counter.
    With the kernel clock on, two mark kernels bracket the events (the clock's region bounds)."""
    __slots__ = ("rec", "label", "pair", "t0", "stream")
    def __init__(self, rec, label):
        if (not isinstance(label, str) or not 1 <= len(label) <= 64
                or not _LABEL_CHARS.issuperset(label)):
            raise ValueError(f"t.region: the label {label!r} is not 1 to 64 of A-Z a-z 0-9 _ . -")
        self.rec, self.label, self.pair, self.t0, self.stream = rec, label, None, 0.0, None
    def __enter__(self):
        rec = self.rec
        if rec.torch is not None:
            if rec.torch.cuda.is_current_stream_capturing():
                return self  # captured into a graph: events there cannot be timed; not a region
            if rec.mark is not None:
                s = rec.torch.cuda.current_stream().cuda_stream
                if rec.mark(1, s) != 0:
                    raise RuntimeError("t.region: the kernel clock's region mark could not be queued")
                self.stream = s
                rec.order.append(self.label)
            i = rec.used
            if i == len(rec.pool):
                E = rec.torch.cuda.Event
                rec.pool.append((E(enable_timing=True), E(enable_timing=True)))
            rec.used = i + 1
            self.pair = rec.pool[i]
            self.pair[0].record()
        else:
            self.t0 = rec.clock()
        return self
    def __exit__(self, *exc):
        rec = self.rec
        if rec.torch is not None:
            if self.pair is not None:
                self.pair[1].record()
                rec.marks.append((self.label, self.pair))
            if self.stream is not None and rec.mark(0, self.stream) != 0:
                raise RuntimeError("t.region: the kernel clock's region mark could not be queued")
        else:
            rec.marks.append((self.label, (rec.clock() - self.t0) * 1e3))
        return False

class _Regions:
    """The named regions a step marked since the last window opened (docs/python-arms.md)."""
    __slots__ = ("torch", "clock", "marks", "pool", "used", "mark", "order")
    def __init__(self, cuda, mark_ptr=0):
        import time
        self.torch = None
        self.mark = None  # the device's region mark (kernel clock on), through ctypes
        if cuda:
            import torch
            self.torch = torch
            if mark_ptr:
                import ctypes
                self.mark = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)(mark_ptr)
        self.clock = time.perf_counter
        self.marks, self.pool, self.used, self.order = [], [], 0, []
    def region(self, label):
        return _Region(self, label)

def regions_reset(rec):
    rec.marks = []
    rec.used = 0
    rec.order = []

def regions_take(rec):
    """{"ms": label -> ms summed over the regions since the reset, "order": the labels of the
    regions the kernel clock's marks bracket, in entry order}, as JSON; None when none."""
    marks, order = rec.marks, rec.order
    rec.marks = []
    rec.used = 0
    rec.order = []
    if not marks and not order:
        return None
    import json
    out = {}
    if rec.torch is not None:
        for label, (a, b) in marks:
            b.synchronize()
            out[label] = out.get(label, 0.0) + a.elapsed_time(b)
    else:
        for label, ms in marks:
            out[label] = out.get(label, 0.0) + ms
    return json.dumps({"ms": out, "order": order})

_ML_DTYPES_ADVICE = ("numpy has no fp8 type of its own: install ml_dtypes (pip install ml_dtypes) "
                     "into this Python, or run the protocol on cuda with torch")

def _typed_view(a, kind, cuda):
    """A uint8 view of prereg's bytes as the element type `kind` ("bool", "float8_e4m3fn",
    "float8_e5m2"): torch's own types on CUDA, numpy's bool and ml_dtypes' fp8 on the CPU."""
    if cuda:
        import torch
        dt = getattr(torch, kind, None)
        if dt is None:
            raise TypeError(f"prereg: torch {torch.__version__} has no {kind}")
        return a.view(dt)
    import numpy
    if kind == "bool":
        return a.view(numpy.bool_)
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError(f"prereg: {_ML_DTYPES_ADVICE}") from None
    return a.view(getattr(ml_dtypes, kind))

def element_support(device, kinds_json):
    """"" when this interpreter can view tensors of every element type named in kinds_json (a JSON
    list of "float8_e4m3fn", "float8_e5m2"), else why not (one line). On cuda a torch that is not
    importable here is not a refusal (the device is checked elsewhere); one without fp8 types is."""
    import json
    kinds = json.loads(kinds_json)
    if not kinds:
        return ""
    if device == "cuda":
        try:
            import torch
        except ImportError:
            return ""
        missing = [k for k in kinds if getattr(torch, k, None) is None]
        return f"torch {torch.__version__} has no {', '.join(missing)}" if missing else ""
    try:
        import numpy
    except ImportError:
        return ""
    try:
        import ml_dtypes
    except ImportError:
        return f"{', '.join(kinds)}: {_ML_DTYPES_ADVICE}"
    missing = [k for k in kinds if getattr(ml_dtypes, k, None) is None]
    return f"ml_dtypes {getattr(ml_dtypes, '__version__', '?')} has no {', '.join(missing)}" if missing else ""

def _arm_namespace(tensors):
    """An empty `t` whose missing attributes name the operation's tensors: `t.out` on an
    operation without `out` raises AttributeError listing the tensors there are."""
    listed = ", ".join(tensors)

    class t_(types.SimpleNamespace):
        __slots__ = ()

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            raise AttributeError(f"t has no tensor or field {name!r} "
                                 f"(the operation's tensors: {listed})")
    return t_()

def bind(fn, meta, caps, device, ordinal, stream_ptr, mark_ptr=0):
    t = _arm_namespace(list(caps))
    views = meta.pop("views", {})
    if device == "cuda":
        import torch
        torch.cuda.set_device(ordinal)
        torch.cuda.set_stream(torch.cuda.ExternalStream(stream_ptr, device=ordinal))
        for name, cap in caps.items():
            v = None if cap is None else torch.from_dlpack(_DL(cap, (2, ordinal)))
            setattr(t, name, v if v is None or name not in views else _typed_view(v, views[name], True))
    else:
        for name, cap in caps.items():
            v = None if cap is None else _numpy_view(cap)
            setattr(t, name, v if v is None or name not in views else _typed_view(v, views[name], False))
    for k, v in meta.items():
        setattr(t, k, v)
    rec = _Regions(device == "cuda", mark_ptr)
    t.region = rec.region
    step = fn(t)
    if not callable(step):
        raise TypeError(f"the arm function returned {type(step).__name__}, not a step callable")
    return (t, step, rec)

def _type_name(v):
    t = type(v)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"

def _output_problem(v, cuda):
    """Why `v` is not an output prereg accepts from a step (docs/python-arms.md, "Outputs"), or
    None: exactly a numpy.ndarray of numbers on the CPU, or exactly a dense torch.Tensor on the
    protocol's device. Only the types are looked at: no code of the arm's runs here."""
    t = type(v)
    torch = sys.modules.get("torch")  # not imported: nothing can be a torch.Tensor
    if torch is not None and t is torch.Tensor:
        want = "cuda" if cuda else "cpu"
        if v.device.type != want or v.layout != torch.strided:
            return f"a torch.Tensor on {v.device} ({v.layout}), not a dense tensor on {want}"
        return None
    numpy = sys.modules.get("numpy")
    if not cuda and numpy is not None and t is numpy.ndarray:
        if v.dtype.kind not in "fiub":
            return f"a numpy.ndarray of {v.dtype}, not of numbers"
        return None
    return f"a {_type_name(v)}, not exactly a {'torch.Tensor' if cuda else 'numpy.ndarray or torch.Tensor'}"

def outputs(result, cuda):
    """What prereg keeps of a step's result, checked as the step returns (inside the timed
    window): None, or a new dict of the outputs it returned, each exactly a numpy.ndarray or a
    torch.Tensor whose values exist now; anything else (a subclass, an object numpy would
    convert later through __array__, a dict subclass) raises TypeError, failing the cell."""
    if result is None:
        return None
    if type(result) is not dict:
        raise TypeError(f"the step returned {_type_name(result)}, not None or a dict of outputs")
    out = {}
    for name, v in result.items():  # an exact dict: iterating runs none of the arm's code
        if type(name) is not str:
            raise TypeError(f"the step returned a key of type {_type_name(name)}, not a tensor name")
        why = _output_problem(v, cuda)
        if why is not None:
            raise TypeError(f"the step returned {name} as {why} (prereg takes only those, "
                            "materialised when the step returns)")
        out[name] = v
    return out

def collect(t, result, device):
    if result is None:
        return
    if not isinstance(result, dict):
        raise TypeError(f"the step returned {type(result).__name__}, not None or a dict of outputs")
    for name, v in result.items():
        dst = getattr(t, name, None) if isinstance(name, str) else None
        if dst is None:
            raise KeyError(f"the step returned '{name}', which is not a tensor of this pass")
        if device == "cuda":
            dst.copy_(v.detach().reshape(dst.shape))
        else:
            import numpy
            numpy.copyto(dst, numpy.asarray(v).reshape(dst.shape), casting="unsafe")

def window_open(ordinal, rec):
    import torch
    regions_reset(rec)
    torch.cuda.reset_peak_memory_stats(ordinal)
    return torch.cuda.memory_allocated(ordinal)

def capture_open(ordinal):
    import torch
    torch.cuda.reset_peak_memory_stats(ordinal)
    return torch.cuda.memory_allocated(ordinal)

def window_peak(ordinal, base):
    import torch
    return max(0, torch.cuda.max_memory_allocated(ordinal) - base)

def versions_json():
    import json
    return json.dumps(versions())

def describe(exc):
    """The failure reason: the exception's type and the first non-empty line of its message
    (a torch.compile failure's last line is only its "Set TORCHDYNAMO_VERBOSE=1" trailer)."""
    name = type(exc).__qualname__
    module = type(exc).__module__
    if module not in ("builtins", "__main__"):
        name = module + "." + name
    first = next((l.strip() for l in str(exc).splitlines() if l.strip()), "")
    return name + ": " + first if first else name

def full_traceback(exc, tb):
    """The whole traceback of `exc` (raised through `tb`), for the arms' log beside the report."""
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))

def versions():
    from importlib import metadata
    out = {"python": sys.version.split()[0], "executable": sys.executable, "packages": {}}
    for p in ("numpy", "torch", "triton", "transformers"):
        try:
            out["packages"][p] = metadata.version(p)
        except Exception:
            out["packages"][p] = None
    return out
