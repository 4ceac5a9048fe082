"""A Python arm written as a decorated function in a test or a notebook, and the protocol file
that names it. The arm's file is pinned at freeze as any `python:` arm's (docs/python-arms.md):
a function defined in a .py file is that file; one defined in a notebook cell is first written
to ARMS_DIR/<function>.py (with the `imports` given), which is then the pinned file."""
import dataclasses
import inspect
import json
import os
import pathlib
import textwrap

ARMS_DIR = "prereg_arms"


@dataclasses.dataclass(frozen=True)
class ArmRef:
    """An arm as a protocol names it: `python: FILE` and `function: NAME` (or a `kernel:`)."""

    id: str
    file: pathlib.Path | None = None
    function: str | None = None
    kernel: str | None = None
    options: dict | None = None


def _is_real_file(path):
    return bool(path) and not path.startswith("<") and os.path.isfile(path) and \
        path.endswith(".py") and "ipykernel" not in path


def _notebook_file(fn, imports, arms_dir):
    """Writes the function's source (without decorators) to ARMS_DIR/<name>.py; returns it."""
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
    path = pathlib.Path(arms_dir) / f"{fn.__name__}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "# Written by prereg_gpu.arm from a notebook cell; pinned at freeze.\n"
    text += (textwrap.dedent(imports).strip() + "\n\n\n" if imports else "\n")
    text += "\n".join(lines) + "\n"
    tmp = path.with_suffix(".py.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path.resolve()


def arm(id=None, *, imports="", options=None, arms_dir=ARMS_DIR):  # noqa: A002 - the YAML key
    """Decorator: the function (t) -> step becomes an arm with this id (default: its name).
    The function is returned unchanged, with `.prereg_arm` (an ArmRef) attached."""

    def wrap(fn):
        source = inspect.getsourcefile(fn) or ""
        file = pathlib.Path(source).resolve() if _is_real_file(source) else \
            _notebook_file(fn, imports, arms_dir)
        fn.prereg_arm = ArmRef(id=id or fn.__name__, file=file, function=fn.__name__,
                               options=options)
        return fn

    if callable(id):  # used bare: @arm
        fn, id = id, None
        return wrap(fn)
    return wrap


def kernel(id, name, options=None):  # noqa: A002
    """A built-in kernel as an arm (`prereg arms` lists them)."""
    return ArmRef(id=id, kernel=name, options=options)


def _scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))


def _flow(v):
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_flow(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_flow(x) for x in v) + "]"
    return _scalar(v)


def _block(d, indent=0):
    pad = " " * indent
    out = []
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.append(f"{pad}{k}:")
            out.extend(_block(v, indent + 2))
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, dict) for x in v):
            out.append(f"{pad}{k}:")
            for item in v:
                first, *rest = _block(item, indent + 4)
                out.append(f"{pad}  - {first.lstrip()}")
                out.extend(rest)
        else:
            out.append(f"{pad}{k}: {_flow(v)}")
    return out


def _arm_entry(a, base):
    ref = getattr(a, "prereg_arm", a)
    entry = {"id": ref.id}
    if ref.kernel:
        entry["kernel"] = ref.kernel
    else:
        entry["python"] = os.path.relpath(ref.file, base)
        entry["function"] = ref.function
    if ref.options:
        entry["options"] = dict(ref.options)
    return entry


def protocol_yaml(*, arms, base_dir=".", **fields):
    """A protocol's YAML text: `fields` in order (prereg, id, title, hypothesis, device, ...,
    predictions), with `arms` (decorated functions or kernel() refs) placed after `passes` (or
    at the end); python: paths are relative to `base_dir`, the protocol file's folder."""
    fields.setdefault("prereg", 1)
    ordered = {"prereg": fields.pop("prereg")}
    entries = [_arm_entry(a, base_dir) for a in arms]
    for k, v in fields.items():
        ordered[k] = v
        if k == "passes":
            ordered["arms"] = entries
    ordered.setdefault("arms", entries)
    return "\n".join(_block(ordered)) + "\n"


def write_protocol(path, *, arms, **fields):
    """Writes protocol_yaml(...) to `path` (atomically) and returns the path."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = protocol_yaml(arms=arms, base_dir=path.parent.resolve(), **fields)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
