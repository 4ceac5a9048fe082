# End-to-end: an operation declared in a file of the user's (docs/operations.md). The CPU
# example (examples/operations: swiglu with a numpy reference and two numpy arms) is checked,
# frozen, run and audited, and so is a C plugin arm of it; a changed operation file after freeze is exit 3; malformed
# declarations (an unknown role, a dim naming no axis, a bytes formula naming no axis, a missing
# declaration or file) are exit 2 at check/freeze; a reference that raises, returns the wrong
# shape or dtype, returns NaN or disagrees with itself is a recorded cell failure at run time
# and the report is still signed and audits clean; a declaration that reads otherwise in the
# measuring process than at freeze is refused (exit 2).
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
export PREREG_PYTHON=$py
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: $py has no numpy"; exit 77; }
out=$work/reports
json_get() { "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1/report.json" "$2"; }

# --- the CPU example ---------------------------------------------------------------------------
cp -r "$PREREG_SOURCE_DIR/examples/operations" "$work/ex"
expect_exit 0 "check reads the operation file" -- "$PREREG" check "$work/ex/swiglu_cpu.yaml"
checked=$(tail -n 1 "$work/out")
expect_exit 0 "freeze the example" -- "$PREREG" freeze "$work/ex/swiglu_cpu.yaml"
hash=$(tail -n 1 "$work/out")
[ "$hash" = "$(echo "$checked" | grep -oE '[0-9a-f]{64}')" ] && pass "check and freeze agree on the hash" \
  || fail "check printed '$checked', freeze $hash"
rec="$PREREG_STORE/protocols/$hash/freeze.json"
[ "$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['operation']['sha256'])" "$rec")" = \
  "$(sha256sum "$work/ex/swiglu.py" | cut -d' ' -f1)" ] && pass "the freeze record pins the operation file" \
  || fail "freeze record: $(cat "$rec")"
expect_exit 0 "run the example" -- "$PREREG" run "$hash" --out "$out" --quiet
dir=$(tail -n 1 "$work/out")
expect_exit 0 "its report audits clean" -- "$PREREG" audit "$dir"
[ "$(json_get "$dir" "all(c['passed'] for c in r['correctness'])")" = True ] \
  && pass "both numpy arms pass the operation's reference" || fail "correctness: $(json_get "$dir" "r['correctness']")"
[ "$(json_get "$dir" "sorted(set((c['pass'], c['rows'], c['bytes_per_step']) for c in r['cells']))")" = \
  "[('fwd', 64, 786432), ('fwd', 512, 6291456), ('fwd+bwd', 64, 2097152), ('fwd+bwd', 512, 16777216)]" ] \
  && pass "bytes per step follow the declared formulas" || fail "bytes: $(json_get "$dir" "[(c['pass'], c['rows'], c['bytes_per_step']) for c in r['cells']]")"
[ "$(json_get "$dir" "all(c['gbps'] > 0 for c in r['cells'])")" = True ] && pass "gbps is derived on every cell" \
  || fail "gbps: $(json_get "$dir" "[c['gbps'] for c in r['cells']]")"
[ "$(json_get "$dir" "[p['verdict'] in ('confirmed', 'refuted', 'inconclusive') for p in r['predictions']]")" = "[True, True]" ] \
  && pass "predictions are judged" || fail "predictions: $(json_get "$dir" "r['predictions']")"
if "$py" -c 'import jsonschema' 2>/dev/null; then
  "$py" "$PREREG_SOURCE_DIR/tests/schemas/validate.py" "$PREREG_SOURCE_DIR/docs/schema" report "$dir/report.json" >"$work/val" 2>&1 \
    && pass "the report (its freeze record's operation entry) holds for report.schema.json" || fail "schema: $(head -5 "$work/val")"
fi
# The audit re-derives bytes from the recorded descriptor: a tampered bytes_per_step fails it.
cp -r "$dir" "$work/tampered"
"$py" - "$work/tampered/report.json" <<'PY'
import json, sys
p = sys.argv[1]; r = json.load(open(p)); r["cells"][0]["bytes_per_step"] += 4
json.dump(r, open(p, "w"))
PY
expect_exit 4 "a report with a tampered bytes_per_step does not audit" -- "$PREREG" audit "$work/tampered"
grep -qE "FAIL statistics: .*bytes_per_step is [0-9]+ in the report, recomputed [0-9]+" "$work/out" \
  && pass "  ... the statistics check re-derives bytes from the pinned descriptor" || fail "audit: $(cat "$work/out")"
# A C plugin arm against the same operation file (the ABI passes the file's tensors by name).
if ${CC:-cc} -O2 -fPIC -shared -I"$PREREG_SOURCE_DIR/runner/include" -o "$work/ex/libswiglu.so" \
  "$work/ex/swiglu_plugin.c" -lm 2>"$work/cc.err"; then
  sed 's/^id: swiglu_cpu/id: swiglu_cpu_plugin/; s/^  rows: \[64, 512\]/  rows: [64]/' "$work/ex/swiglu_cpu.yaml" >"$work/ex/plugin.yaml"
  printf '  - id: c\n    plugin: libswiglu.so\n    name: swiglu_c\n' >"$work/ex/arm.txt"
  sed -i '/^arms:/r '"$work/ex/arm.txt" "$work/ex/plugin.yaml"
  sed -i '/^  - id: P1/,/expect: "scratch < eager"/d' "$work/ex/plugin.yaml"
  expect_exit 0 "freeze a protocol with a plugin arm of the operation" -- "$PREREG" freeze "$work/ex/plugin.yaml"
  expect_exit 0 "run it" -- "$PREREG" run "$(tail -n 1 "$work/out")" --out "$out" --quiet
  pdir=$(tail -n 1 "$work/out")
  expect_exit 0 "its report audits clean" -- "$PREREG" audit "$pdir"
  [ "$(json_get "$pdir" "sorted(set((c['arm'], c['passed']) for c in r['correctness']))")" = "[('c', True), ('eager', True), ('scratch', True)]" ] \
    && pass "the plugin arm passes the operation's reference in both passes" || fail "correctness: $(json_get "$pdir" "r['correctness']")"
else
  fail "cannot build the plugin: $(head -3 "$work/cc.err")"
fi
echo "# changed" >>"$work/ex/swiglu.py"
expect_exit 3 "a changed operation file after freeze is refused" -- "$PREREG" run "$hash" --out "$out" --quiet
expect_err "operation file of swiglu changed since freezing" "the refusal names the operation"

# --- malformed declarations: exit 2 at check and freeze, one line naming the operation ---------
cp "$PREREG_SOURCE_DIR/tests/data/operations/"* "$work/"
stored=$(ls "$PREREG_STORE/protocols" | wc -l)
protocol() { sed "s/NAME/$1/g; s/ROWS/$2/" "$work/protocol.yaml" >"$work/$1.yaml"; }
refused() { # NAME PATTERN DESCRIPTION
  protocol "$1" "[4]"
  expect_exit 2 "$3 is refused at check" -- "$PREREG" check "$work/$1.yaml"
  expect_err "^prereg: error: operation $1: $2" "  ... in one line naming the operation"
  [ "$(grep -c . "$work/err")" -eq 1 ] || fail "  ... stderr has more than one line: $(cat "$work/err")"
  expect_exit 2 "$3 is refused at freeze" -- "$PREREG" freeze "$work/$1.yaml"
}
refused bad_role "tensor x has the unknown role 'inout'" "an unknown role"
refused bad_dim "tensor x has dim 'depth', which names no axis" "a dim naming no axis"
refused bad_bytes "the bytes formula of pass fwd '2 \* rows \* width \* s' names 'width'" "a bytes formula naming no axis"
refused nosuch "the file declares no nosuch" "a declaration the file lacks"
sed 's/NAME/other_axes/g; s/^  rows: ROWS/  m: [4]/; s/^  cols: \[8\]/  n: [8]/' "$work/protocol.yaml" >"$work/other_axes.yaml"
expect_exit 0 "a protocol over the operation's named axes m, n passes check" -- "$PREREG" check "$work/other_axes.yaml"
expect_exit 0 "... and freezes (tests/e2e/named_axes.sh runs one)" -- "$PREREG" freeze "$work/other_axes.yaml"
stored=$((stored + 1))
sed 's/bad_ops.py/needs_module.py/' "$work/protocol.yaml" >"$work/needs.yaml" && sed -i "s/NAME/doubled/g; s/ROWS/[4]/" "$work/needs.yaml"
expect_exit 5 "a module the file imports that is not installed is the environment's (exit 5)" -- "$PREREG" check "$work/needs.yaml"
expect_err "operation doubled: cannot load the operation file with Python .*ModuleNotFoundError" "  ... naming the interpreter and the module"
sed 's/bad_ops.py/gone.py/' "$work/protocol.yaml" >"$work/gone.yaml" && sed -i "s/NAME/doubled/g; s/ROWS/[4]/" "$work/gone.yaml"
expect_exit 2 "a missing operation file is refused" -- "$PREREG" check "$work/gone.yaml"
expect_err "operation doubled: its file gone.py does not exist" "  ... naming the file"
[ "$(ls "$PREREG_STORE/protocols" | wc -l)" -eq "$stored" ] && pass "nothing refused was stored" || fail "store: $(ls "$PREREG_STORE/protocols")"

# --- a declaration that depends on the environment: refused at run -----------------------------
protocol drifting "[4]"
"$PREREG" freeze "$work/drifting.yaml" >"$work/out" 2>&1
PREREG_TEST_EPS=0.5 expect_exit 2 "a declaration that reads otherwise at run than at freeze is refused" -- "$PREREG" run "$(tail -n 1 "$work/out")" --out "$out" --quiet
expect_err "operation drifting: the file's declaration, read in the measuring process, differs from the descriptor frozen with it" "  ... in one line"

# --- a misbehaving reference: recorded per cell at run time; the report is signed --------------
# (right at the smallest shape, where the dry run of freeze calls it: docs/engine.md)
protocol misbehaving "[1, 2, 3, 4, 5, 6]"
expect_exit 0 "freeze the misbehaving operation" -- "$PREREG" freeze "$work/misbehaving.yaml"
expect_exit 0 "run it: the reference's failures do not stop the run" -- "$PREREG" run "$(tail -n 1 "$work/out")" --out "$out" --quiet
dir=$(tail -n 1 "$work/out")
expect_exit 0 "that report audits clean" -- "$PREREG" audit "$dir"
detail() { json_get "$dir" "[c['detail'] for c in r['correctness'] if c['rows']==$1][0]"; }
check_detail() { # ROWS PATTERN DESCRIPTION
  detail "$1" | grep -qE -- "$2" && pass "$3" || fail "$3: $(detail "$1")"
}
check_detail 2 "reference failed: operation misbehaving: the reference at fwd 2x8 raised ZeroDivisionError: planted failure \(line [0-9]+\)" "a reference that raises is the cell's failure"
check_detail 3 "returned y of shape \(3, 7\), not \(3, 8\)" "a wrong shape is named"
check_detail 4 "returned y as float32, not float64" "a wrong dtype is named"
check_detail 5 "returned y with nan at element 10" "a NaN is named"
check_detail 6 "disagrees with itself across two calls" "a reference that disagrees with itself is named"
[ "$(json_get "$dir" "[c['passed'] for c in r['correctness'] if c['rows']==1]")" = "[True]" ] \
  && pass "the well-behaved shape passes" || fail "rows 1: $(json_get "$dir" "[c for c in r['correctness'] if c['rows']==1]")"
finish
