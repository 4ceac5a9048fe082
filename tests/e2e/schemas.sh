# The JSON Schemas of docs/schema/ hold for every committed report and protocol, the test
# reports, `prereg canon` of every shipped and example protocol (protocols/, tests/data/protocols/)
# and a report made here by a CPU run; every committed merged report and a replication report made
# here hold for merged-report.schema.json, and each format is rejected by the other's schema; a
# report over named axes (schema_version 6) and one with the device's state, stop records and a
# `throttled` defect (7) hold; and planted-bad documents are rejected.
# Skipped (77) only without python3-jsonschema.
source "$(dirname "$0")/lib.bash"
py=/usr/bin/python3
schemas=$PREREG_SOURCE_DIR/docs/schema
validate=$PREREG_SOURCE_DIR/tests/schemas/validate.py
"$py" -c 'import jsonschema' 2>/dev/null || { echo "skipped: python3-jsonschema is not installed"; exit 77; }
cd "$PREREG_SOURCE_DIR" || exit 1

check() { # check DESCRIPTION KIND FILE...: every FILE validates
  local what=$1; shift
  if "$py" "$validate" "$schemas" "$@" >"$work/val" 2>&1; then pass "$what ($(grep -c '^ok' "$work/val") documents)"
  else fail "$what"; grep -v '^ok' "$work/val" | sed 's/^/    /' | head -10; fi
}

# A merged report (docs/scale-out.md) is its own format (merged-report.schema.json); the run
# reports it keeps under parts/ are run reports. The forked stores' reports under docs/evidence/
# are committed run reports too.
reports=()
merged=()
for r in reports/*/*/report.json reports/*/*/parts/*/*/report.json docs/evidence/*/*/reports/*/*/report.json; do
  if grep -q '"merge_version"' "$r"; then merged+=("$r"); else reports+=("$r"); fi
done
[ "${#reports[@]}" -ge 7 ] && pass "${#reports[@]} committed reports found" || fail "committed reports missing"
check "committed reports and their protocol bodies (and the merged schema rejects each)" report "${reports[@]}"
[ "${#merged[@]}" -ge 1 ] && pass "${#merged[@]} committed merged report(s) found" || fail "committed merged reports missing"
check "committed merged reports (and the run report schema rejects each)" merged "${merged[@]}"
check "test reports" report tests/data/reports/*.json
# A report over named axes (schema_version 6, shape keys: tests/data/reports/cpu_rotary.json, a
# CPU run of examples/operations/rotary_cpu.yaml) is among them; planted-bad copies are rejected.
"$py" -c 'import json,sys; assert json.load(open(sys.argv[1]))["schema_version"] == 6' \
  tests/data/reports/cpu_rotary.json && pass "a test report over named axes is schema_version 6" \
  || fail "tests/data/reports/cpu_rotary.json is not schema_version 6"
if "$py" "$validate" "$schemas" --planted-named tests/data/reports/cpu_rotary.json >"$work/val" 2>&1; then
  pass "every planted-bad copy of the named report is rejected ($(grep -c '^ok' "$work/val") checks)"
else
  fail "planted-bad copies of the named report"; grep -v '^ok' "$work/val" | sed 's/^/    /' | head -10
fi
# A version-7 report with states, stop records and a `throttled` defect (its evidence's samples a
# list of indices): the fake device's run of tests/device_state_test.cpp, written here. A copy
# whose throttled samples is a count, as other codes' are, is rejected.
mkdir -p "$work/samples"
PREREG_SCHEMA_SAMPLES=$work/samples "$PREREG_BUILD_DIR/tests/prereg_tests" \
  --test-case='a run with a stopping rule and a state reader*' >"$work/unit" 2>&1 ||
  { fail "the device-state test that writes the version-7 sample"; tail -5 "$work/unit"; }
v7=$work/samples/state_stop_throttled.json
"$py" -c 'import json,sys; r = json.load(open(sys.argv[1])); assert r["schema_version"] == 7
assert any(d["code"] == "throttled" and isinstance(d["evidence"]["samples"], list) for d in r["defects"])' \
  "$v7" && pass "a version-7 report with a throttled defect" || fail "no version-7 sample at $v7"
check "the version-7 report (states, stop, throttled)" report "$v7"
"$py" -c 'import json,sys; r = json.load(open(sys.argv[1]))
for d in r["defects"]:
    if d["code"] == "throttled": d["evidence"]["samples"] = len(d["evidence"]["samples"])
json.dump(r, open(sys.argv[2], "w"))' "$v7" "$work/throttled_count.json"
if "$py" "$validate" "$schemas" report "$work/throttled_count.json" >"$work/val" 2>&1; then
  fail "a throttled defect whose samples is a count was accepted"
else
  pass "a throttled defect whose samples is a count is rejected"
fi

check "frozen protocols in .prereg" protocol .prereg/protocols/*/protocol.json

mkdir -p "$work/canon"
n=0
while IFS= read -r yaml; do
  n=$((n + 1))
  "$PREREG" canon "$yaml" >"$work/canon/$n.json" 2>"$work/err" || fail "prereg canon $yaml: $(head -1 "$work/err")"
done < <(find protocols tests/data/protocols -name '*.yaml' | sort)
[ "$n" -ge 9 ] && pass "prereg canon of $n shipped and example protocols" || fail "only $n protocols"
check "prereg canon of the shipped and example protocols" protocol "$work"/canon/*.json

# A fresh report from the CPU backend: a tiny protocol, 3 repetitions.
cat >"$work/tiny.yaml" <<'YAML'
prereg: 1
id: schema_tiny
title: "Tiny CPU run for the schema test"
hypothesis: "The fused CPU LayerNorm is at most twice the unfused time at a tiny shape."
device: cpu
operation: layernorm
dtype: fp32
shapes: {rows: [8], cols: [64]}
passes: [fwd]
arms:
  - id: unfused
    kernel: layernorm.unfused
  - id: fused
    kernel: layernorm.fused
measurement: {repetitions: 3, warmup: 1, l2_flush: false}
analysis: {bootstrap_resamples: 200}
predictions:
  - id: P1
    claim: "fused is at most twice the unfused time"
    expect: "fused <= 2 * unfused"
YAML
expect_exit 0 "freeze the tiny protocol" -- "$PREREG" freeze "$work/tiny.yaml"
expect_exit 0 "run it on the CPU" -- "$PREREG" run "$work/tiny.yaml" --out "$work/reports" --quiet
dir=$(tail -n 1 "$work/out")
fresh=$dir/report.json
[ -s "$fresh" ] && pass "fresh report written" || fail "no fresh report at $fresh"
"$py" -c 'import json,sys; r = json.load(open(sys.argv[1])); assert r["schema_version"] == 8 and "roofs" in r["instrument"]' "$fresh" \
  && pass "fresh report is schema_version 8 (the CPU's roofs)" || fail "fresh report is not schema_version 8 with roofs"
check "the fresh report" report "$fresh"
check "the fresh frozen protocol" protocol "$PREREG_STORE"/protocols/*/protocol.json

# The schemas can fail: planted-bad copies of a version-3 (fresh) and a version-1 (committed)
# report and of their protocols are rejected. The committed one is the first whose report is
# schema_version 1 and whose protocol is prereg: 1 (the planted edits assume `shapes`).
v1=""
for r in "${reports[@]}"; do
  if "$py" -c 'import json,sys; r = json.load(open(sys.argv[1])); sys.exit(0 if r["schema_version"] == 1 and r["protocol"]["body"]["prereg"] == 1 else 1)' "$r"; then
    v1=$r
    break
  fi
done
[ -n "$v1" ] && pass "a committed version-1 report to plant into: $v1" || fail "no committed version-1 report"
# A replication report (docs/scale-out.md) of two tiny CPU runs: valid for the merged schema,
# rejected by the run report's; planted-bad copies of it and of the committed merged report are
# rejected.
sed -e 's/^prereg: 1$/prereg: 2/' -e 's/^id: schema_tiny$/id: schema_replication/' \
  -e 's/^shapes: /axes: /' -e 's/^analysis: .*$/&\nreplication: {devices: 2, rule: all}/' \
  "$work/tiny.yaml" >"$work/replication.yaml"
expect_exit 0 "freeze a tiny replication protocol" -- "$PREREG" freeze "$work/replication.yaml"
for i in 1 2; do
  expect_exit 0 "replication run $i on the CPU" -- "$PREREG" run "$work/replication.yaml" --out "$work/reports" --quiet
  tail -n 1 "$work/out" >"$work/full$i"
done
expect_exit 0 "merge --replication" -- "$PREREG" merge --replication "$(cat "$work/full1")" "$(cat "$work/full2")" --out "$work/reports"
replication=$(tail -n 1 "$work/out")/report.json
check "the replication report (and the run report schema rejects it)" merged "$replication"
for base in "${merged[@]:0:1}" "$replication"; do
  if "$py" "$validate" "$schemas" --planted-merged "$base" >"$work/val" 2>&1; then
    pass "every planted-bad copy of $(basename "$(dirname "$base")") is rejected ($(grep -c '^ok' "$work/val") checks)"
  else
    fail "planted-bad copies of $base"; grep -v '^ok' "$work/val" | sed 's/^/    /' | head -10
  fi
done

for base in "$fresh" "$v1"; do
  "$py" -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["protocol"]["body"], open(sys.argv[2], "w"))' \
    "$base" "$work/body.json"
  if "$py" "$validate" "$schemas" --planted "$base" "$work/body.json" >"$work/val" 2>&1; then
    pass "every planted-bad copy of $(basename "$(dirname "$base")") is rejected ($(grep -c '^ok' "$work/val") checks)"
  else
    fail "planted-bad copies of $base"; grep -v '^ok' "$work/val" | sed 's/^/    /' | head -10
  fi
done
finish
