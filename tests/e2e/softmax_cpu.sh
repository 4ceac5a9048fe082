# End-to-end: the softmax CPU protocol (an operation added as one descriptor plus its kernels)
# freezes, runs through the one engine, and audits clean; its report names the operation.
source "$(dirname "$0")/lib.bash"
src=$PREREG_SOURCE_DIR/protocols/softmax_cpu.yaml
out=$work/reports

expect_exit 0 "freeze softmax_cpu" -- "$PREREG" freeze "$src"
hash=$(tail -n 1 "$work/out")
expect_exit 0 "run softmax_cpu" -- "$PREREG" run "$hash" --out "$out" --quiet
dir=$(tail -n 1 "$work/out")
[[ "$dir" =~ /softmax_cpu/[0-9]{8}T[0-9]{6}Z-${hash:0:12}-[0-9a-f]{6}$ ]] && pass "report folder name" || fail "report folder $dir"
expect_exit 0 "audit softmax_cpu" -- "$PREREG" audit "$dir"
grep -q "^audit PASSED" "$work/out" && pass "audit passed" || fail "audit output: $(tail -n 2 "$work/out")"
/usr/bin/python3 - "$dir/report.json" <<'PY' && pass "softmax report: 8 cells, correct arms, fused fwd allocates nothing" || fail "softmax report contents"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["protocol"]["body"]["operation"] == "softmax"
cells = r["cells"]
assert len(cells) == 8, len(cells)
assert all(c["error"] is None and c["n"] == 9 for c in cells)
assert all(c["passed"] for c in r["correctness"]), r["correctness"]
for c in cells:
    if c["arm"] == "fused" and c["pass"] == "fwd":
        assert c["peak_bytes"] == 0, c
    if c["arm"] == "unfused":
        assert c["peak_bytes"] > 0, c
# the bytes model of softmax: fwd 2 M N 4, fwd+bwd 5 M N 4
for c in cells:
    mn = c["rows"] * c["cols"] * 4
    assert c["bytes_per_step"] == (2 if c["pass"] == "fwd" else 5) * mn, c
PY
finish
