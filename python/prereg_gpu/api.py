"""freeze, check, run, try_, audit and verdict: each one call of the binary, with typed results."""
import dataclasses
import json
import os
import pathlib

from . import _show
from ._process import invoke
from .errors import PreregError
from .progress import Display, in_notebook


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cells[] entry of report.json: an arm at one pass and shape (times in ms)."""

    arm: str
    pass_: str
    shape: dict
    n: int
    median_ms: float | None
    q1_ms: float | None
    q3_ms: float | None
    statistic_ms: float | None
    gbps: float | None
    pct_ceiling: float | None
    flags: tuple
    error: str | None
    samples_ms: tuple

    @property
    def label(self):
        """"ARM PASS ROWSxCOLS" (or "ARM PASS a=1 b=2"), as prereg labels cells."""
        if set(self.shape) == {"rows", "cols"}:
            dims = f"{self.shape['rows']}x{self.shape['cols']}"
        else:
            dims = " ".join(f"{k}={v}" for k, v in self.shape.items())
        return f"{self.arm} {self.pass_} {dims}"


@dataclasses.dataclass(frozen=True)
class Prediction:
    """One predictions[] entry: a pre-registered prediction and its verdict."""

    id: str
    claim: str
    expect: str
    verdict: str  # "confirmed" | "refuted" | "inconclusive"
    reason: str


@dataclasses.dataclass(frozen=True)
class Defect:
    """One defects[] entry: what the instrument found wrong with its own measurement."""

    code: str
    message: str
    cell: dict | None


@dataclasses.dataclass(frozen=True)
class Report:
    """A report folder and its report.json, typed (the raw JSON is in `data`)."""

    dir: pathlib.Path
    run_id: str
    protocol_id: str
    protocol_hash: str
    exploratory: bool
    attempt: int
    predictions: tuple
    cells: tuple
    defects: tuple
    data: dict = dataclasses.field(repr=False, compare=False)

    @property
    def verdicts(self):
        """prediction id -> verdict."""
        return {p.id: p.verdict for p in self.predictions}

    def verdict(self, prediction_id):
        """The verdict of one prediction; KeyError naming the ids there are."""
        v = self.verdicts
        if prediction_id not in v:
            raise KeyError(f"no prediction {prediction_id!r} in {self.dir} (it has {sorted(v)})")
        return v[prediction_id]

    def __repr__(self):
        """The protocol and run, each verdict with its claim and reason, each cell's median, IQR,
        n, flags and error."""
        return _show.report_text(self)

    def _repr_html_(self):
        """The same as tables, for Jupyter."""
        return _show.report_html(self)


@dataclasses.dataclass(frozen=True)
class AuditCheck:
    name: str
    passed: bool
    detail: str


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """`prereg audit --json`: every check, and whether all passed (exit 0) or not (exit 4)."""

    report_dir: pathlib.Path
    passed: bool
    exit_code: int
    history: str
    checks: tuple

    @property
    def failed(self):
        return [c.name for c in self.checks if not c.passed]


def _shape(c):
    if "shape" in c:
        return {a["axis"]: a["extent"] for a in c["shape"]}
    return {"rows": c["rows"], "cols": c["cols"]}


def _cell(c):
    return Cell(arm=c["arm"], pass_=c["pass"], shape=_shape(c), n=c.get("n", 0),
                median_ms=c.get("median_ms"), q1_ms=c.get("q1_ms"), q3_ms=c.get("q3_ms"),
                statistic_ms=c.get("statistic_ms"), gbps=c.get("gbps"),
                pct_ceiling=c.get("pct_ceiling"), flags=tuple(c.get("flags", ())),
                error=c.get("error"), samples_ms=tuple(c.get("samples_ms", ())))


def read_report(folder):
    """The Report of a report folder (its report.json)."""
    folder = pathlib.Path(folder)
    data = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    proto = data.get("protocol", {})
    return Report(
        dir=folder, run_id=data.get("run", {}).get("run_id", folder.name),
        protocol_id=proto.get("body", {}).get("id", ""), protocol_hash=proto.get("hash", ""),
        exploratory=bool(data.get("exploratory", False)), attempt=data.get("attempt", 0),
        predictions=tuple(Prediction(p["id"], p.get("claim", ""), p.get("expect", ""),
                                     p["verdict"], p.get("reason", ""))
                          for p in data.get("predictions", ())),
        cells=tuple(_cell(c) for c in data.get("cells", ())),
        defects=tuple(Defect(d["code"], d.get("message", ""), d.get("cell"))
                      for d in data.get("defects", ())),
        data=data)


def _common(store=None, key=None):
    args = []
    if store is not None:
        args += ["--store", os.fspath(store)]
    if key is not None:
        args += ["--key", os.fspath(key)]
    return args


def freeze(path, store=None, key=None, dry_run=True):
    """`prereg freeze PATH`: validate, normalise, hash, store, sign; returns the hash.
    dry_run=False is `--no-dry-run`: the arms and the reference are not called first."""
    _, out = invoke(["freeze", os.fspath(path), *_common(store, key),
                     *([] if dry_run else ["--no-dry-run"])])
    return out.strip().splitlines()[-1]


def check(path, store=None, dry_run=True):
    """`prereg check PATH`: the hash the protocol would get; stores nothing.
    dry_run=False is `--no-dry-run`: the arms and the reference are not called."""
    _, out = invoke(["check", os.fspath(path), *_common(store),
                     *([] if dry_run else ["--no-dry-run"])])
    return out.strip().splitlines()[-1]


def _progress_callback(progress):
    """progress: None (auto: shown in a notebook), False, True, or a callable(Progress)."""
    if progress is None:
        progress = in_notebook()
    if progress is False:
        return None, None
    if progress is True:
        shown = Display()
        return shown, shown
    return progress, None


def _measure(args, progress):
    callback, display = _progress_callback(progress)
    try:
        _, out = invoke(args, on_progress=callback)
    finally:
        if display is not None:
            display.close()
    return read_report(out.strip().splitlines()[-1])


def run(target, store=None, key=None, out=None, device=None, progress=None):
    """`prereg run TARGET` (a hash, a prefix, an id or a frozen file): measure, judge, sign.
    Returns the Report. progress: None shows it in a notebook, True always, False never, or a
    callable receiving each Progress."""
    args = ["run", os.fspath(target), *_common(store, key)]
    if out is not None:
        args += ["--out", os.fspath(out)]
    if device is not None:
        args += ["--device", str(device)]
    return _measure(args, progress)


def try_(path, out=None, store=None, progress=None):
    """`prereg try PATH`: an EXPLORATORY run of an unfrozen protocol (unsigned, no ledger)."""
    args = ["try", os.fspath(path), *_common(store)]
    if out is not None:
        args += ["--out", os.fspath(out)]
    return _measure(args, progress)


def audit(report_dir, store=None, trust=()):
    """`prereg audit --json REPORT_DIR`: an AuditResult (passed False on exit 4; other failures
    raise PreregError)."""
    args = ["audit", "--json", os.fspath(report_dir), *_common(store)]
    for t in trust:
        args += ["--trust", os.fspath(t)]
    code, out = invoke(args, ok_codes=(0, 4))
    j = json.loads(out)
    return AuditResult(report_dir=pathlib.Path(j["report"]), passed=bool(j["passed"]),
                       exit_code=code, history=j.get("history", ""),
                       checks=tuple(AuditCheck(c["name"], bool(c["passed"]), c["detail"])
                                    for c in j["checks"]))


def _run_key(folder):
    name = folder.name
    return name[len("MERGE-"):] if name.startswith("MERGE-") else name


def latest_report(protocol_id, reports="reports"):
    """The newest report folder of `protocol_id` under REPORTS/ID/ (by run id's UTC stamp)."""
    base = pathlib.Path(reports) / protocol_id
    folders = [p for p in base.glob("*") if (p / "report.json").is_file()
               and not p.name.startswith("EXPLORATORY-")] if base.is_dir() else []
    if not folders:
        raise PreregError(f"prereg: error: no report of {protocol_id} ({base})", 2)
    return max(folders, key=_run_key)


def verdict(prediction_id, protocol_id, reports="reports", store=None, trust=()):
    """The verdict of a frozen prediction in the newest report of `protocol_id`, after that
    report audits clean: `assert verdict("P3", "ln_batch1") == "confirmed"` gates CI on it. A
    report that fails its audit raises PreregError (exit 4) naming the failed checks."""
    folder = latest_report(protocol_id, reports)
    result = audit(folder, store=store, trust=trust)
    if not result.passed:
        raise PreregError(f"prereg: error: audit failed: {', '.join(result.failed)} ({folder})",
                          4)
    return read_report(folder).verdict(prediction_id)
