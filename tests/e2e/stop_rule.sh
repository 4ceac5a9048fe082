# End-to-end (issue 35): a prereg: 2 CPU protocol with a stopping rule freezes, runs through the
# CLI (the measuring process, the pipe), is written as schema_version 8 (version 7's records and
# the CPU's roofs) with a stop record per cell, renders the device-state section and audits
# clean; the CPU has no state reader and says so. A cell's samples cut short and re-signed by
# hand fail the audit's statistics check (the ledger's too: the report's bytes are not the ones
# it recorded). Two shards of a two-shape protocol under the rule (schema_version 8) merge into a
# version-8 merged report that audits clean and holds for merged-report.schema.json
# (docs/scale-out.md).
source "$(dirname "$0")/lib.bash"
out=$work/reports
cat >"$work/stop.yaml" <<'YAML'
prereg: 2
id: stop_cpu
title: "LayerNorm on the CPU under a stopping rule"
hypothesis: "The fused forward is faster than the unfused one at 64 x 256"
device: cpu
operation: layernorm
dtype: fp32
axes:
  rows: [64]
  cols: [256]
passes: [fwd]
arms:
  - id: unfused
    kernel: layernorm.unfused
  - id: fused
    kernel: layernorm.fused
measurement:
  stop: {rel_ci: 0.05, min: 5, max: 40, max_seconds: 5}
  warmup: 1
  l2_flush: false
analysis:
  bootstrap_resamples: 200
predictions:
  - id: P1
    claim: "fused is faster"
    at: {rows: 64, cols: 256, pass: fwd}
    expect: "fused < unfused"
YAML

expect_exit 0 "freeze a protocol with measurement.stop" -- "$PREREG" freeze "$work/stop.yaml"
hash=$(tail -n 1 "$work/out")
expect_exit 0 "run it" -- "$PREREG" run "$hash" --out "$out" --quiet
dir=$(tail -n 1 "$work/out")
expect_exit 0 "audit it" -- "$PREREG" audit "$dir"
grep -q "the stopping rule (rel_ci 0.05, min 5, max 40, max_seconds 5) replayed explains" "$work/out" \
  && pass "the audit replayed the rule" || fail "audit output: $(grep statistics "$work/out")"
/usr/bin/python3 - "$dir/report.json" <<'PY' && pass "schema 8: a stop record per cell, no state reader on the CPU" || fail "report contents"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema_version"] == 8, r["schema_version"]  # 7's stop records, with the CPU's roofs
assert r["environment"]["device_state"].startswith("unknown: "), r["environment"]["device_state"]
assert "stop" in r["protocol"]["body"]["measurement"]
assert "repetitions" not in r["protocol"]["body"]["measurement"]
for c in r["cells"]:
    s = c["stop"]
    assert s["reason"] in ("precision", "max", "max_seconds"), s
    assert 5 <= len(c["samples_ms"]) <= 40, len(c["samples_ms"])
    assert "states" not in c
    if s["reason"] == "precision":
        assert s["rel_ci"] <= 0.05, s
parts = [p["name"] for p in r["phases"]["timing"]]
assert "stopping rule" in parts and "device state" not in parts, parts
PY
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
  /usr/bin/python3 "$PREREG_SOURCE_DIR/tests/schemas/validate.py" "$PREREG_SOURCE_DIR/docs/schema" \
    report "$dir/report.json" >"$work/val" 2>&1 && pass "the schema 8 report holds for report.schema.json" \
    || fail "report.schema.json: $(grep -v '^ok' "$work/val" | head -3)"
fi
grep -q "## Device state and stopping" "$dir/report.md" && pass "report.md has the device-state section" \
  || fail "report.md lacks the device-state section"
grep -q "until the median's interval is within 0.05" "$dir/report.md" && pass "the design table states the rule" \
  || fail "the design table does not state the rule"
/usr/bin/python3 - "$dir/report.json" <<'PY'
import json, sys
p = sys.argv[1]
r = json.load(open(p))
c = r["cells"][0]
c["samples_ms"] = c["samples_ms"][:-1] if len(c["samples_ms"]) > 5 else c["samples_ms"] + c["samples_ms"][:1]
json.dump(r, open(p, "w"))
PY
expect_exit 4 "a cell's sample count changed: the audit fails" -- "$PREREG" audit "$dir"
grep -q "statistics" "$work/out" && pass "the statistics check names it" || fail "audit output: $(cat "$work/out" | head -5)"

# Shards under the rule: version-8 parts (the CPU's roofs) merge into a version-8 merged report.
sed -e 's/^id: stop_cpu$/id: stop_shards/' -e 's/^  rows: \[64\]$/  rows: [16, 32]/' \
  -e 's/max: 40, max_seconds: 5/max: 12, max_seconds: 5/' -e 's/at: {rows: 64, /at: {rows: 32, /' \
  "$work/stop.yaml" >"$work/shards.yaml"
expect_exit 0 "freeze a two-shape protocol under the rule" -- "$PREREG" freeze "$work/shards.yaml"
parts=()
for k in 1 2; do
  expect_exit 0 "run shard $k/2" -- "$PREREG" run stop_shards --shard "$k/2" --out "$out" --quiet
  parts+=("$(tail -n 1 "$work/out")")
done
expect_exit 0 "merge the version-8 shards" -- "$PREREG" merge "${parts[@]}" --out "$out"
merged=$(tail -n 1 "$work/out")
/usr/bin/python3 -c 'import json,sys; r = json.load(open(sys.argv[1])); assert r["schema_version"] == 8 and "roofs" in r["instrument"]
assert len(r["cells"]) == 4 and all("stop" in c and "roofline" in c for c in r["cells"])' "$merged/report.json" &&
  pass "the merged report is version 8 and carries every cell's stop record and roofline" ||
  fail "merged report.json: $(head -c 300 "$merged/report.json")"
expect_exit 0 "audit the merged report" -- "$PREREG" audit "$merged"
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
  /usr/bin/python3 "$PREREG_SOURCE_DIR/tests/schemas/validate.py" "$PREREG_SOURCE_DIR/docs/schema" \
    merged "$merged/report.json" >"$work/val" 2>&1 && pass "the version-8 merge holds for merged-report.schema.json" \
    || fail "merged-report.schema.json: $(grep -v '^ok' "$work/val" | head -3)"
fi
finish
