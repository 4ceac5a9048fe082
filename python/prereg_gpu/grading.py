"""Grading from Python (docs/grading.md): submit, grade and the reward, each one call of the binary."""
import dataclasses
import json
import os
import pathlib

from ._process import invoke


@dataclasses.dataclass(frozen=True)
class Exclusion:
    """Why a submission is excluded: its code, the cell (or None) and the detail."""

    code: str
    cell: dict | None
    detail: str


@dataclasses.dataclass(frozen=True)
class Reward:
    """`prereg reward --json`: the task's score of one submission, 0 when it failed or is
    excluded (then `exclusions` say why), its interval, its signed report's folder and its
    re-timing in a second process (`retime`: cell, nonce, report, both processes' quartiles,
    `confirmed`, and under `earlier`, present when one slower alone was repeated, the
    re-timings before it; None when the first process already excluded it)."""

    score: float
    score_lo: float | None
    score_hi: float | None
    excluded: bool
    exclusions: tuple
    report: pathlib.Path | None
    retime: dict | None
    baseline: pathlib.Path
    seconds: float
    raw: dict = dataclasses.field(repr=False, compare=False)


def _common(store=None, key=None):
    args = []
    if store is not None:
        args += ["--store", os.fspath(store)]
    if key is not None:
        args += ["--key", os.fspath(key)]
    return args


def reward(task, *files, entry=None, heldout=None, baseline=None, out=None, device=None,
           store=None, key=None):
    """Grades `files` (the entry file first: .py, .so or .c) against the frozen `task` (a hash,
    a prefix or an id) and returns its Reward. The first call for a task measures its baseline
    and later calls reuse it (`baseline`: a baseline report's folder to use instead)."""
    args = ["reward", os.fspath(task), *(os.fspath(f) for f in files), "--json",
            *_common(store, key)]
    for flag, value in (("--entry", entry), ("--heldout", heldout), ("--baseline", baseline),
                        ("--out", out), ("--device", device)):
        if value is not None:
            args += [flag, os.fspath(value) if not isinstance(value, int) else str(value)]
    _, text = invoke(args)
    j = json.loads(text)
    return Reward(score=j["score"], score_lo=j["score_lo"], score_hi=j["score_hi"],
                  excluded=bool(j["excluded"]),
                  exclusions=tuple(Exclusion(x["code"], x["cell"], x["detail"])
                                   for x in j["exclusions"]),
                  report=pathlib.Path(j["report"]) if j["report"] else None,
                  retime=j.get("retime"),
                  baseline=pathlib.Path(j["baseline"]), seconds=j["seconds"], raw=j)


def submit(task, *files, name, entry=None, store=None, key=None):
    """`prereg submit TASK FILES... --name NAME`: pins a submission; returns its id (NAME.N)."""
    args = ["submit", os.fspath(task), *(os.fspath(f) for f in files), "--name", name,
            *_common(store, key)]
    if entry is not None:
        args += ["--entry", entry]
    _, text = invoke(args)
    return text.strip().splitlines()[-1]


def grade(task, heldout=None, out=None, all=False, store=None, key=None):
    """`prereg grade TASK`: grades the pending submissions; returns the leaderboard's folder
    (None when nothing was pending) and its leaderboard.json, as (path, dict)."""
    args = ["grade", os.fspath(task), *_common(store, key)]
    if heldout is not None:
        args += ["--heldout", os.fspath(heldout)]
    if out is not None:
        args += ["--out", os.fspath(out)]
    if all:
        args.append("--all")
    _, text = invoke(args)
    lines = text.strip().splitlines()
    if not lines:
        return None, None
    folder = pathlib.Path(lines[-1])
    return folder, json.loads((folder / "leaderboard.json").read_text(encoding="utf-8"))
