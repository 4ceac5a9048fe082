#!/usr/bin/python3
"""Validates JSON documents against docs/schema/*.schema.json (Debian's python3-jsonschema).

usage: validate.py SCHEMA_DIR (report|merged|protocol|leaderboard) FILE...   every FILE must
       validate (a leaderboard, docs/grading.md, against leaderboard.schema.json)
       validate.py SCHEMA_DIR --planted REPORT PROTOCOL   planted-bad copies must be rejected
       validate.py SCHEMA_DIR --planted-merged MERGED     planted-bad copies must be rejected
A run report (report) must also be rejected by merged-report.schema.json, and a merged report
(merged, docs/scale-out.md) by report.schema.json.
Exit 0 when everything holds, 1 with one line per failure otherwise, 77 without jsonschema.
"""
import copy
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed")
    sys.exit(77)


def load_schemas(folder):
    schemas = {}
    for name in ("report", "merged-report", "protocol-v1", "protocol-v2", "leaderboard"):
        with open(os.path.join(folder, name + ".schema.json"), encoding="utf-8") as f:
            s = json.load(f)
        jsonschema.Draft202012Validator.check_schema(s)
        schemas[name] = s
    store = {s["$id"]: s for s in schemas.values()}
    validators = {}
    for name, s in schemas.items():
        resolver = jsonschema.RefResolver.from_schema(s, store=store)
        validators[name] = jsonschema.Draft202012Validator(s, resolver=resolver)
    return validators


def protocol_validator(validators, doc):
    return validators["protocol-v2" if isinstance(doc, dict) and doc.get("prereg") == 2
                      else "protocol-v1"]


def problems(validator, doc):
    return ["{}: {}".format("/".join(str(p) for p in e.absolute_path) or "(root)", e.message[:200])
            for e in validator.iter_errors(doc)]


def planted(report, protocol):
    """(what, kind, document) triples that the schemas must reject."""
    out = []

    def edit(what, doc, fn, kind="report"):
        d = copy.deepcopy(doc)
        fn(d)
        out.append((what, kind, d))

    v2 = report["schema_version"] >= 2
    v3 = report["schema_version"] == 3
    edit("a sample that is a string", report, lambda r: r["cells"][0]["samples_ms"].__setitem__(0, "fast"))
    edit("a cell without median_ms", report, lambda r: r["cells"][0].pop("median_ms"))
    edit("an unknown cell member", report, lambda r: r["cells"][0].__setitem__("note", 1))
    edit("an unknown top-level member", report, lambda r: r.__setitem__("note", 1))
    edit("schema_version 6 with rows x cols keys", report,
         lambda r: r.__setitem__("schema_version", 6))
    if "phases" in report:
        edit("a phase without ms", report, lambda r: r["phases"]["list"][0].pop("ms"))
        edit("a negative wall time", report, lambda r: r["phases"].__setitem__("wall_ms", -1))
        edit("phases in a version-4 report", report,
             lambda r: r.__setitem__("schema_version", 4))
    edit("a verdict outside the vocabulary", report,
         lambda r: r["predictions"][0].__setitem__("verdict", "maybe"))
    edit("p above 1", report, lambda r: r["predictions"][0]["cells"][0].__setitem__("p", 1.5))
    edit("an unknown defect code", report, lambda r: r["defects"].append(
        {"code": "gremlins", "message": "m", "evidence": {}}))
    edit("a drift defect without its cell", report, lambda r: r["defects"].append(
        {"code": "drift", "message": "m", "evidence": {"spearman_rho": 0.9, "n": 30}}))
    edit("a run-level kernel-records-dropped defect with a cell", report,
         lambda r: r["defects"].append({"code": "kernel-records-dropped", "message": "m",
                                        "cell": {k: r["cells"][0][k]
                                                 for k in ("arm", "pass", "rows", "cols")},
                                        "evidence": {"kernel_records_dropped": 1}}))
    edit("a negative peak_bytes", report, lambda r: r["cells"][0].__setitem__("peak_bytes", -1))
    edit("a protocol body with an unknown member", report,
         lambda r: r["protocol"]["body"].__setitem__("note", 1))
    edit("a protocol hash that is not SHA-256 hex", report,
         lambda r: r["protocol"].__setitem__("hash", "abc"))
    if v3:
        edit("a version-3 cell without first_call_ms", report,
             lambda r: r["cells"][0].pop("first_call_ms"))
        edit("a version-3 cell with a negative warmup_calls", report,
             lambda r: r["cells"][0].__setitem__("warmup_calls", -1))
        edit("version-3 cells in a version-2 report", report,
             lambda r: r.__setitem__("schema_version", 2))
        edit("an off-window-work defect without its evidence", report,
             lambda r: r["defects"].append({"code": "off-window-work", "message": "m",
                                            "cell": {k: r["cells"][0][k]
                                                     for k in ("arm", "pass", "rows", "cols")},
                                            "evidence": {}}))
    if v2:
        edit("a version-2 cell without clock_mhz", report, lambda r: r["cells"][0].pop("clock_mhz"))
        edit("a version-2 cell with a fractional harness_bytes_in_window", report,
             lambda r: r["cells"][0].__setitem__("harness_bytes_in_window", 0.5))
        edit("version-2 cells in a version-1 report", report,
             lambda r: r.__setitem__("schema_version", 1))
    else:
        edit("a version-1 cell with clock_mhz", report,
             lambda r: r["cells"][0].__setitem__("clock_mhz", 1000))
    edit("prereg: 3", protocol, lambda p: p.__setitem__("prereg", 3), "protocol")
    edit("a protocol without predictions", protocol, lambda p: p.pop("predictions"), "protocol")
    edit("a protocol with 2 repetitions", protocol,
         lambda p: p["measurement"].__setitem__("repetitions", 2), "protocol")
    edit("a protocol with an upper-case id", protocol, lambda p: p.__setitem__("id", "Smoke"),
         "protocol")
    edit("a prereg: 1 protocol with axes", protocol,
         lambda p: p.__setitem__("axes", p.pop("shapes")), "protocol")
    edit("a prereg: 2 protocol with shapes", protocol,
         lambda p: p.__setitem__("prereg", 2), "protocol")
    edit("a prereg: 1 arm with options", protocol,
         lambda p: p["arms"][0].__setitem__("options", {}), "protocol")
    return out


def planted_named(report):
    """(what, document) pairs over a schema_version 6 report (named axes) that the run report's
    schema must reject."""
    out = []

    def edit(what, fn):
        d = copy.deepcopy(report)
        fn(d)
        out.append((what, d))

    def flat(key):  # rows, cols in place of the shape
        key.pop("shape")
        key.update({"rows": 4, "cols": 8})

    edit("a named report's cell keyed by rows and cols", lambda r: flat(r["cells"][0]))
    edit("a named report's correctness record keyed by rows and cols",
         lambda r: flat(r["correctness"][0]))
    edit("a named report's prediction cell keyed by rows and cols",
         lambda r: flat(r["predictions"][0]["cells"][0]))
    edit("a cell with both a shape and rows, cols",
         lambda r: r["cells"][0].update({"rows": 4, "cols": 8}))
    edit("shape keys in a version-5 report", lambda r: r.__setitem__("schema_version", 5))
    edit("a shape extent of 0", lambda r: r["cells"][0]["shape"][0].__setitem__("extent", 0))
    edit("a shape axis named with an upper-case letter",
         lambda r: r["cells"][0]["shape"][0].__setitem__("axis", "B"))
    edit("an empty shape", lambda r: r["cells"][0].__setitem__("shape", []))
    edit("a defect cell keyed by rows and cols in a named report",
         lambda r: r["defects"].append({"code": "drift", "message": "m",
                                        "cell": {"arm": "a", "pass": "fwd", "rows": 4, "cols": 8},
                                        "evidence": {"spearman_rho": 0.9, "n": 30}}))
    edit("a named protocol whose at misses pass",
         lambda r: r["protocol"]["body"]["predictions"][0]["at"].pop("pass"))
    return out


def planted_merged(merged):
    """(what, document) pairs that the merged-report schema must reject."""
    out = []

    def edit(what, fn):
        d = copy.deepcopy(merged)
        fn(d)
        out.append((what, d))

    edit("a merged report without merge_version", lambda m: m.pop("merge_version"))
    edit("merge_version 2", lambda m: m.__setitem__("merge_version", 2))
    edit("a kind outside the vocabulary", lambda m: m.__setitem__("kind", "union"))
    edit("an unknown top-level member", lambda m: m.__setitem__("note", 1))
    edit("a run member (run reports only)", lambda m: m.__setitem__("run", {}))
    edit("an attempt member (run reports only)", lambda m: m.__setitem__("attempt", 1))
    edit("a part without report_sha256", lambda m: m["parts"][0].pop("report_sha256"))
    edit("a part with an unknown member", lambda m: m["parts"][0].__setitem__("note", 1))
    edit("a part verdict outside the vocabulary",
         lambda m: m["parts"][0]["verdicts"].append({"id": "P", "verdict": "maybe"}))
    edit("a merge without merged_at", lambda m: m["merge"].pop("merged_at"))
    edit("a tool with a renderer no build writes for merged pages (3)",
         lambda m: m["tool"].__setitem__("renderer", 3))
    edit("a tool with renderer 1 (written as absence)",
         lambda m: m["tool"].__setitem__("renderer", 1))
    if merged.get("kind") == "shards":
        edit("a shards part without shard", lambda m: m["parts"][0].pop("shard"))
        edit("a shards report without cells", lambda m: m.pop("cells"))
        edit("a shards report with a replication rule", lambda m: m.__setitem__(
            "replication", {"devices": 2, "rule": "all", "threshold": 2}))
        edit("a shards report whose merge id is a REPLICATION id",
             lambda m: m["merge"].__setitem__("merge_id", "REPLICATION" + m["merge"]["merge_id"][5:]))
        edit("a merged cell without median_ms", lambda m: m["cells"][0].pop("median_ms"))
        edit("a merged prediction p above 1",
             lambda m: m["predictions"][0]["cells"][0].__setitem__("p", 1.5))
        edit("a merged defect with an unknown code", lambda m: m["defects"].append(
            {"code": "gremlins", "message": "m", "evidence": {}}))
    else:
        edit("a replication report without its rule", lambda m: m.pop("replication"))
        edit("a replication report with cells", lambda m: m.__setitem__("cells", []))
        edit("a pooled prediction without its count of confirmations",
             lambda m: m["predictions"][0].pop("confirmed"))
        edit("a replication part with a shard",
             lambda m: m["parts"][0].__setitem__("shard", {"index": 1, "count": 2}))
    return out


def main(argv):
    validators = load_schemas(argv[1])
    failures = 0
    if argv[2] == "--planted":
        with open(argv[3], encoding="utf-8") as f:
            report = json.load(f)
        with open(argv[4], encoding="utf-8") as f:
            protocol = json.load(f)
        assert not problems(validators["report"], report), "the base report must be valid"
        assert not problems(protocol_validator(validators, protocol), protocol)
        v2 = copy.deepcopy(protocol)
        v2["prereg"] = 2
        v2["axes"] = v2.pop("shapes")
        for arm in v2["arms"]:
            arm["options"] = {}
        v2["arms"][0]["options"] = {"block": 256}
        v2["operation"] = "softmax"
        found = problems(validators["protocol-v2"], v2)
        if found:
            print("FAIL - rejected a prereg: 2 protocol (axes, options, softmax): " + found[0])
            failures += 1
        else:
            print("ok - accepted: a prereg: 2 protocol (axes, options, softmax)")
        for what, kind, doc in planted(report, protocol):
            v = validators["report"] if kind == "report" else protocol_validator(validators, doc)
            if problems(v, doc):
                print("ok - rejected: " + what)
            else:
                print("FAIL - accepted: " + what)
                failures += 1
        return 1 if failures else 0
    if argv[2] == "--planted-named":
        with open(argv[3], encoding="utf-8") as f:
            report = json.load(f)
        assert report["schema_version"] == 6, "the base report must be a named one"
        assert not problems(validators["report"], report), "the base report must be valid"
        for what, doc in planted_named(report):
            if problems(validators["report"], doc):
                print("ok - rejected: " + what)
            else:
                print("FAIL - accepted: " + what)
                failures += 1
        return 1 if failures else 0
    if argv[2] == "--planted-merged":
        with open(argv[3], encoding="utf-8") as f:
            merged = json.load(f)
        assert not problems(validators["merged-report"], merged), "the base report must be valid"
        for what, doc in planted_merged(merged):
            if problems(validators["merged-report"], doc):
                print("ok - rejected: " + what)
            else:
                print("FAIL - accepted: " + what)
                failures += 1
        return 1 if failures else 0
    kind = argv[2]
    # A run report and a merged report are two formats: each schema rejects the other's.
    other = {"report": "merged-report", "merged": "report"}.get(kind)
    for path in argv[3:]:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if kind == "report":
            v = validators["report"]
        elif kind == "merged":
            v = validators["merged-report"]
        elif kind == "leaderboard":
            v = validators["leaderboard"]
        else:
            v = protocol_validator(validators, doc)
        found = problems(v, doc)
        if other is not None and isinstance(doc, dict):
            body = doc.get("protocol", {}).get("body")
            found += ["protocol.body: " + p
                      for p in problems(protocol_validator(validators, body), body)]
            if not problems(validators[other], doc):
                found.append("also valid against {}.schema.json".format(other))
        if found:
            failures += 1
            print("FAIL - {}: {}".format(path, "; ".join(found[:3])))
        else:
            print("ok - {} is a valid {}".format(path, kind))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
