# End-to-end: tensors of every element type (docs/operations.md, "Element types"). First the CPU
# tests of the typed operations' references and formulas (tests/python/test_typed_ops.py); then,
# in a temporary store, CPU protocols are checked, frozen, run and audited: cross-entropy with
# int64 targets and a 0-dim mean loss (numpy; a planted arm with the retired fixed targets fails
# the gate), the embedding lookup (numpy; an off-by-one arm fails), a probe of every integer and
# bool type with 0-dim outputs (numpy and a C plugin that checks the DLPack types; an arm that
# leaves an output unwritten fails as `unwritten`), and the FP8 GEMM and the fp8 probe through the
# C plugin. The numpy fp8 arms run where ml_dtypes is importable; elsewhere `check` says why they
# cannot run here and `run` refuses them (exit 5). Last, each bad declaration of a type is refused
# at `check` (exit 2, one line).
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
export PREREG_PYTHON=$py
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: $py has no numpy"; exit 77; }
out=$work/reports
json_get() { "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1/report.json" "$2"; }
have_ml_dtypes=0
"$py" -c 'import ml_dtypes' 2>/dev/null && have_ml_dtypes=1

"$py" "$PREREG_SOURCE_DIR/tests/python/test_typed_ops.py" >"$work/unit" 2>&1 \
  && pass "references, planted reference bugs, bytes and FLOPs formulas: $(tail -n 1 "$work/unit")" \
  || fail "test_typed_ops.py: $(grep -E '^FAIL|Error' "$work/unit" | head -5)"

p=$work/p
mkdir -p "$p/operations" "$p/kernels/python" "$p/protocols"
cp "$PREREG_SOURCE_DIR"/operations/*.py "$p/operations/"
cp "$PREREG_SOURCE_DIR/kernels/python/typed_numpy.py" "$PREREG_SOURCE_DIR/tests/data/python/typed_arms.py" \
  "$PREREG_SOURCE_DIR/tests/data/operations/typed_probe.py" "$p/kernels/python/"
${CC:-cc} -O2 -fPIC -shared -I"$PREREG_SOURCE_DIR/runner/include" -o "$p/kernels/libtyped.so" \
  "$PREREG_SOURCE_DIR/tests/data/operations/typed_plugin.c" -lm 2>"$work/cc.err" \
  || fail "cannot build the typed plugin: $(head -3 "$work/cc.err")"

# protocol ID OPERATION_FILE NAME AXES ARMS: a CPU fp32 protocol, 3 repetitions, no prediction
# that can fail on a slow machine.
protocol() {
  cat >"$p/protocols/$1.yaml" <<YAML
prereg: 2
id: $1
title: "$1 on the CPU"
hypothesis: "Every arm computes the operation within its tolerance."
device: cpu
operation: {python: ../operations/$2, name: $3}
dtype: fp32
axes: $4
passes: [fwd]
arms:
$5
measurement: {repetitions: 3, warmup: 1}
predictions:
  - {id: P1, claim: "a positive bandwidth", at: {}, expect: "gbps($6) > 0"}
YAML
}
# run_protocol ID: check, freeze, run, audit; the report folder in $dir.
# (a second argument --no-dry-run: the protocol has an arm that is wrong on purpose)
run_protocol() {
  expect_exit 0 "$1: check" -- "$PREREG" check "$p/protocols/$1.yaml" ${2:-}
  expect_exit 0 "$1: freeze" -- "$PREREG" freeze "$p/protocols/$1.yaml" ${2:-}
  expect_exit 0 "$1: run" -- "$PREREG" run "$(tail -n 1 "$work/out")" --out "$out" --quiet
  dir=$(tail -n 1 "$work/out")
  expect_exit 0 "$1: its report audits clean" -- "$PREREG" audit "$dir"
  if "$py" -c 'import jsonschema' 2>/dev/null; then
    "$py" "$PREREG_SOURCE_DIR/tests/schemas/validate.py" "$PREREG_SOURCE_DIR/docs/schema" report "$dir/report.json" >"$work/val" 2>&1 \
      && pass "$1: the report holds for report.schema.json" || fail "$1 schema: $(head -5 "$work/val")"
  fi
}
# verdict ARM: "passed" or the arm's first correctness detail
verdict() { json_get "$dir" "next((('passed' if c['passed'] else c['detail']) for c in r['correctness'] if c['arm'] == '$1'), 'none')"; }

# --- cross-entropy: int64 targets drawn in [0, vocab), a 0-dim mean loss -----------------------
protocol ce_cpu cross_entropy_targets.py cross_entropy_targets "{rows: [8], vocab: [1000]}" \
  "  - {id: numpy, python: ../kernels/python/typed_numpy.py, function: cross_entropy_targets}
  - {id: fixed, python: ../kernels/python/typed_arms.py, function: ce_fixed_targets}" numpy
sed -i 's/^passes: \[fwd\]/passes: [fwd, fwd+bwd]/' "$p/protocols/ce_cpu.yaml"
# The fixed-targets arm is wrong on purpose: the dry run refuses it at check, naming the 0-dim loss.
expect_exit 2 "ce_cpu: the dry run refuses the fixed-targets arm" -- "$PREREG" check "$p/protocols/ce_cpu.yaml"
expect_err "^prereg: error: dry run: arm fixed .* loss: its value \(a 0-dim tensor\) is" "  ... at its 0-dim loss"
run_protocol ce_cpu --no-dry-run
[ "$(json_get "$dir" "sorted(set(c['passed'] for c in r['correctness'] if c['arm'] == 'numpy'))")" = "[True]" ] \
  && pass "ce_cpu: the numpy arm passes against drawn targets, fwd and fwd+bwd" || fail "ce_cpu numpy: $(verdict numpy)"
verdict fixed | grep -qE "^loss: its value \(a 0-dim tensor\) is [-0-9.e+]+, reference [-0-9.e+]+" \
  && pass "ce_cpu: the retired fixed targets fail the gate at the 0-dim loss" || fail "ce_cpu fixed: $(verdict fixed)"
[ "$(json_get "$dir" "sorted(set((c['pass'], c['bytes_per_step']) for c in r['cells']))")" = \
  "[('fwd', 32068), ('fwd+bwd', 64068)]" ] \
  && pass "ce_cpu: bytes = logits (+ dlogits) + 8 a target + 4 for the loss" \
  || fail "ce_cpu bytes: $(json_get "$dir" "[(c['pass'], c['bytes_per_step']) for c in r['cells']]")"
grep -q '"element":"int64"' "$PREREG_STORE"/protocols/*/freeze.json \
  && pass "ce_cpu: the freeze record pins the targets' element type" || fail "freeze record lacks int64"

# --- the embedding lookup: int64 ids as indices into the table's rows --------------------------
protocol emb_cpu embedding.py embedding "{tokens: [16], vocab: [50], dim: [8]}" \
  "  - {id: numpy, python: ../kernels/python/typed_numpy.py, function: embedding}
  - {id: shifted, python: ../kernels/python/typed_arms.py, function: embedding_off_by_one}" numpy
expect_exit 2 "emb_cpu: the dry run refuses the off-by-one arm" -- "$PREREG" check "$p/protocols/emb_cpu.yaml"
expect_err "^prereg: error: dry run: arm shifted " "  ... naming it"
run_protocol emb_cpu --no-dry-run
[ "$(verdict numpy)" = passed ] && pass "emb_cpu: the numpy gather passes exactly" || fail "emb_cpu: $(verdict numpy)"
verdict shifted | grep -qE "^y: element" && pass "emb_cpu: gathering ids + 1 fails" || fail "emb_cpu shifted: $(verdict shifted)"

# --- every integer and bool type; 0-dim integer and float outputs -------------------------------
protocol probe_cpu typed_probe.py probe "{rows: [5], cols: [7]}" \
  "  - {id: numpy, python: ../kernels/python/typed_arms.py, function: probe}
  - {id: c, plugin: ../kernels/libtyped.so, name: probe_c}
  - {id: unwritten, python: ../kernels/python/typed_arms.py, function: probe_unwritten}
  - {id: allbool, python: ../kernels/python/typed_arms.py, function: probe_wrong_bool}" numpy
sed -i 's|../operations/typed_probe.py|../kernels/python/typed_probe.py|' "$p/protocols/probe_cpu.yaml"
run_protocol probe_cpu --no-dry-run # (its unwritten arm is wrong on purpose)
[ "$(verdict numpy)" = passed ] && pass "probe_cpu: numpy views of int8, uint8, int32, int64, bool pass" || fail "probe numpy: $(verdict numpy)"
[ "$(verdict c)" = passed ] && pass "probe_cpu: the plugin gets each tensor's DLPack type and passes" || fail "probe c: $(verdict c)"
verdict unwritten | grep -qF "total: unwritten (still poison) at its value (a 0-dim tensor)" \
  && pass "probe_cpu: a 0-dim int64 output left unwritten fails as unwritten" || fail "probe unwritten: $(verdict unwritten)"
verdict allbool | grep -qE "^o_b: element [0-9]+ \(row [0-9]+\) is 1, reference 0" \
  && pass "probe_cpu: a wrong bool fails exactly" || fail "probe allbool: $(verdict allbool)"

# --- fp8: the GEMM and the fp8 probe through the plugin; numpy where ml_dtypes is ---------------
protocol gemm_cpu fp8_gemm.py fp8_gemm "{m: [4], n: [6], k: [32]}" \
  "  - {id: c, plugin: ../kernels/libtyped.so, name: fp8_gemm_c}" c
run_protocol gemm_cpu
[ "$(verdict c)" = passed ] && pass "gemm_cpu: e4m3 operands, 0-dim scales: the plugin passes" || fail "gemm c: $(verdict c)"
[ "$(json_get "$dir" "[c['bytes_per_step'] for c in r['cells']]")" = "[424]" ] \
  && pass "gemm_cpu: bytes = a, b (1 byte) + the scales + c" || fail "gemm bytes: $(json_get "$dir" "[c['bytes_per_step'] for c in r['cells']]")"
protocol quant_c_cpu fp8_quant.py quant_fp8_rowwise "{rows: [4], cols: [64]}" \
  "  - {id: c, plugin: ../kernels/libtyped.so, name: quant_c}" c
run_protocol quant_c_cpu
[ "$(verdict c)" = passed ] && pass "quant_c_cpu: e4m3 output and fp32 scales from the plugin pass" || fail "quant c: $(verdict c)"
[ "$(json_get "$dir" "[c['bytes_per_step'] for c in r['cells']]")" = "[1296]" ] \
  && pass "quant_c_cpu: bytes = x + q (1 byte) + 4 a row" || fail "quant bytes: $(json_get "$dir" "[c['bytes_per_step'] for c in r['cells']]")"
protocol probe8_cpu typed_probe.py probe_fp8 "{rows: [5], cols: [7]}" \
  "  - {id: c, plugin: ../kernels/libtyped.so, name: probe_fp8_c}" c
sed -i 's|../operations/typed_probe.py|../kernels/python/typed_probe.py|' "$p/protocols/probe8_cpu.yaml"
run_protocol probe8_cpu
[ "$(verdict c)" = passed ] && pass "probe8_cpu: e4m3 and e5m2 tensors reach the plugin and compare" || fail "probe8 c: $(verdict c)"
# numpy_fp8 ID FILE NAME AXES FUNCTION: the numpy arm of an fp8 operation, run where ml_dtypes is
# importable, refused at check (exit 5, the environment) where it is not.
numpy_fp8() {
  protocol "$1" "$2" "$3" "$4" "  - {id: numpy, python: ../kernels/python/typed_numpy.py, function: $5}" numpy
  if [ "$have_ml_dtypes" = 1 ]; then
    run_protocol "$1"
    [ "$(verdict numpy)" = passed ] && pass "$1: numpy's ml_dtypes fp8 views pass" || fail "$1: $(verdict numpy)"
  else # the environment's fault: check says so (exit 0, as for a missing GPU); run refuses
    local why="arm numpy: operation $3 has fp8 tensors, which Python .* cannot give a Python arm: float8_e4m3fn: numpy has no fp8 type of its own: install ml_dtypes"
    expect_exit 0 "$1: without ml_dtypes check says the numpy arm of an fp8 operation cannot run here" -- "$PREREG" check "$p/protocols/$1.yaml"
    expect_err "^prereg: notice: not checked on this machine \(the environment, not the protocol\): $why" "  ... naming what to install"
    "$PREREG" freeze "$p/protocols/$1.yaml" >"$work/out" 2>&1
    expect_exit 5 "$1: ... and run refuses it (exit 5, the environment)" -- "$PREREG" run "$(tail -n 1 "$work/out")" --out "$out" --quiet
    expect_err "^prereg: error: $why" "  ... in one line"
  fi
}
numpy_fp8 quant_cpu fp8_quant.py quant_fp8_rowwise "{rows: [4], cols: [64]}" quant_fp8_rowwise
numpy_fp8 gemm_np_cpu fp8_gemm.py fp8_gemm "{m: [4], n: [6], k: [32]}" fp8_gemm

# --- bad declarations: exit 2 at check, one line -----------------------------------------------
cp "$PREREG_SOURCE_DIR/tests/data/operations/bad_types.py" "$p/operations/"
bad() { # NAME PATTERN DESCRIPTION [AXES]
  local axes="${4:-}"
  [ -n "$axes" ] || axes="{rows: [4], cols: [8]}"
  protocol "$1" bad_types.py "$1" "$axes" \
    "  - {id: numpy, python: ../kernels/python/typed_numpy.py, function: embedding}" numpy
  expect_exit 2 "$3 is refused at check" -- "$PREREG" check "$p/protocols/$1.yaml"
  expect_err "^prereg: error: operation $1: $2" "  ... in one line naming the operation and tensor"
  [ "$(grep -c . "$work/err")" -eq 1 ] || fail "  ... stderr has more than one line: $(cat "$work/err")"
}
bad range_outside "dist of ids: \[0, 300\) is outside int8 \(its values: -128 to 127\)" "an integer range outside the type"
bad index_past "dist of ids: index_of indexes axis 'rows', which is not a dim of table \(dims: cols\)" "a fill that indexes past the table's axes"
bad unknown_dtype "tensor ids has the unknown element 'int16'" "an unknown dtype"
bad scalar_dims "tensors\[1\]\.dims must be a list of 0 to 8 axis names \(\[\] for a 0-dim tensor" "a 0-dim tensor with dims that are not []"
bad fp8_untolerated "tensor y is fp8_e4m3 and checked: declare tolerance.fp8_e4m3" "an fp8 output without its tolerance"
bad fp8_outside "dist of x: \[-1000, 1000\] is outside fp8_e4m3" "an fp8 range outside the type"
bad range_at_shape "the range of ids \[0, 1000\) is outside int8 \(its values: -128 to 127\) at rows=4 cols=1000" \
  "a range over the axes that leaves the type at one of the protocol's shapes" "{rows: [4], cols: [8, 1000]}"
expect_err "\(.*range_at_shape\.yaml:[0-9]+:[0-9]+\)$" "  ... at the protocol's axes, with its line"
finish
