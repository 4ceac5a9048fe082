# End-to-end (issue 47): the CPU device's real roofs — a read sweep, a memset and an fp32 FMA
# loop — measured through the CLI (the measuring process, the pipe) beside the copy ceiling; a
# prereg: 2 protocol whose predictions read tflops, pct_compute and pct_roof freezes, runs, is
# written as schema_version 8 with instrument.roofs and a roofline per cell that re-derive from
# the report's own numbers, renders a roofline chart and audits clean; a tampered TFLOP/s or bound
# fails the audit's statistics check; prereg: 1 refuses the new words. No timing assertions:
# presence and sanity (positive, finite) only.
source "$(dirname "$0")/lib.bash"
py=/usr/bin/python3
out=$work/reports
cat >"$work/roofs.yaml" <<'YAML'
prereg: 2
id: roofs_cpu
title: "LayerNorm on the CPU against its roofs"
hypothesis: "The CPU LayerNorm forward runs below both of its roofs"
device: cpu
operation: layernorm
dtype: fp32
axes:
  rows: [64, 256]
  cols: [256]
passes: [fwd]
arms:
  - id: unfused
    kernel: layernorm.unfused
  - id: fused
    kernel: layernorm.fused
measurement: {repetitions: 5, warmup: 1, l2_flush: false}
analysis: {bootstrap_resamples: 200}
predictions:
  - id: P1
    claim: "the fused forward computes and streams at some rate"
    expect: "tflops(fused) > 0 and pct_compute(fused) > 0 and pct_roof(fused) > 0"
YAML

expect_exit 0 "freeze a protocol that reads the roofs" -- "$PREREG" freeze "$work/roofs.yaml"
hash=$(tail -n 1 "$work/out")
expect_exit 0 "run it on the CPU" -- "$PREREG" run "$hash" --out "$out" --quiet
dir=$(tail -n 1 "$work/out")
expect_exit 0 "audit it" -- "$PREREG" audit "$dir"
grep -q "; the roofs re-derive from their samples (read .* GB/s, write .* GB/s, fp32 .* TFLOP/s)" "$work/out" \
  && pass "the audit re-derived the roofs" || fail "audit output: $(grep statistics "$work/out")"
"$py" - "$dir/report.json" <<'PY' && pass "schema 8: the real roofs and every cell's roofline, re-derived" || fail "report contents"
import json, math, statistics, sys
r = json.load(open(sys.argv[1]))
assert r["schema_version"] == 8, r["schema_version"]
roofs = r["instrument"]["roofs"]
for name in ("read", "write"):
    s = roofs[name]
    assert s["bytes"] >= 64 << 20 and s["bytes"] <= r["instrument"]["ceiling_bytes"], s["bytes"]
    assert len(s["samples_ms"]) == 3 and all(t > 0 and math.isfinite(t) for t in s["samples_ms"]), s
    want = s["bytes"] / (statistics.median(s["samples_ms"]) * 1e-3) / 1e9
    assert abs(s["gbps"] - want) <= 1e-9 * want, (name, s["gbps"], want)
assert roofs["read"]["method"].startswith("read-sweep") and roofs["write"]["method"].startswith("memset")
assert list(roofs["compute"]) == ["fp32"], roofs["compute"]
c = roofs["compute"]["fp32"]
assert c["tflops"] > 0 and c["flops"] > 0 and len(c["samples_ms"]) == 9, c
assert "multiply-add chains" in c["method"] and "one thread" in c["method"], c["method"]
for cell in r["cells"]:
    f = cell["roofline"]
    assert f["read_bytes_per_step"] + f["write_bytes_per_step"] == cell["bytes_per_step"], f
    assert f["compute"] == "fp32" and f["flops_per_step"] == 7 * cell["rows"] * cell["cols"], f
    t = f["flops_per_step"] / (cell["statistic_ms"] * 1e-3) / 1e12
    assert abs(f["tflops"] - t) <= 1e-9 * t, (f["tflops"], t)
    assert abs(f["pct_compute"] - 100 * t / c["tflops"]) <= 1e-9 * f["pct_compute"], f
    assert abs(f["intensity"] - f["flops_per_step"] / cell["bytes_per_step"]) < 1e-12, f
    assert f["roof_gbps"] > 0 and abs(f["pct_roof"] - 100 * cell["gbps"] / f["roof_gbps"]) <= 1e-9 * f["pct_roof"], f
    assert cell["bound"] in ("launch", "bandwidth", "neither", "compute"), cell["bound"]
PY
if "$py" -c 'import jsonschema' 2>/dev/null; then
  "$py" "$PREREG_SOURCE_DIR/tests/schemas/validate.py" "$PREREG_SOURCE_DIR/docs/schema" \
    report "$dir/report.json" >"$work/val" 2>&1 && pass "the schema 8 report holds for report.schema.json" \
    || fail "report.schema.json: $(grep -v '^ok' "$work/val" | head -3)"
fi
grep -q '<section id="roofline">' "$dir/report.html" && grep -q 'data-kind="roofline"' "$dir/report.html" \
  && pass "report.html draws the roofline" || fail "report.html has no roofline chart"
grep -q "| compute ceiling fp32 | " "$dir/report.md" && grep -q "of the cell's own bandwidth roof" "$dir/report.md" \
  && pass "report.md shows the ceilings and the roofs' table" || fail "report.md lacks the roofs"

cp -r "$dir" "$work/tampered"
"$py" - "$work/tampered/report.json" <<'PY'
import json, sys
p = sys.argv[1]
r = json.load(open(p))
r["cells"][0]["roofline"]["tflops"] *= 2
json.dump(r, open(p, "w"))
PY
expect_exit 4 "a cell's TFLOP/s doubled: the audit fails" -- "$PREREG" audit "$work/tampered"
grep -q "^FAIL statistics: cells\[0\] (unfused fwd 64x256): roofline.tflops differs" "$work/out" \
  && pass "the statistics check names the cell's roofline.tflops" || fail "audit output: $(grep statistics "$work/out")"
cp "$dir/report.json" "$work/tampered/report.json"
"$py" - "$work/tampered/report.json" <<'PY'
import json, sys
p = sys.argv[1]
r = json.load(open(p))
c = r["cells"][1]
c["bound"] = "compute" if c["bound"] != "compute" else "bandwidth"
json.dump(r, open(p, "w"))
PY
expect_exit 4 "a cell's bound changed: the audit fails" -- "$PREREG" audit "$work/tampered"
grep -q "^FAIL statistics: cells\[1\] (unfused fwd 256x256): bound is " "$work/out" \
  && pass "the statistics check names the cell's bound" || fail "audit output: $(grep statistics "$work/out")"

sed -e 's/^prereg: 2/prereg: 1/' -e 's/^axes:/shapes:/' "$work/roofs.yaml" >"$work/v1.yaml"
expect_exit 2 "prereg: 1 refuses tflops()" -- "$PREREG" check "$work/v1.yaml"
expect_err "tflops\(\) reads the roofs and needs prereg: 2" "  ... naming the schema it needs"
finish
