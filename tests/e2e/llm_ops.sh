# End-to-end: the LLM step's shipped operation files (operations/*.py, docs/operations.md "The
# LLM step's operations"). First the CPU tests of every reference, bytes and FLOPs formula
# against hand counts (tests/python/test_llm_ops.py); then two CPU protocols with the numpy arms
# of kernels/python/llm_numpy.py are checked, frozen, run and audited in a temporary store:
# causal GQA attention at a decode and a prefill shape, and cross-entropy over rows x vocab.
# Last, every shipped GPU protocol of protocols/llm passes `check`.
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
export PREREG_PYTHON=$py
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: $py has no numpy"; exit 77; }
out=$work/reports
json_get() { "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1/report.json" "$2"; }

"$py" "$PREREG_SOURCE_DIR/tests/python/test_llm_ops.py" >"$work/unit" 2>&1 \
  && pass "references, bytes and FLOPs formulas against hand counts: $(tail -n 1 "$work/unit")" \
  || fail "test_llm_ops.py: $(grep -E '^FAIL|Error' "$work/unit" | head -5)"

mkdir -p "$work/p/operations" "$work/p/kernels/python" "$work/p/protocols"
cp "$PREREG_SOURCE_DIR"/operations/*.py "$work/p/operations/"
cp "$PREREG_SOURCE_DIR/kernels/python/llm_numpy.py" "$work/p/kernels/python/"
cat >"$work/p/protocols/attn_cpu.yaml" <<'YAML'
prereg: 2
id: attn_cpu
title: "Causal GQA attention from operations/attention.py, numpy on the CPU"
hypothesis: >-
  The numpy arm computes causal grouped-query attention at a decode and a prefill shape within
  the operation's fp32 tolerance, and a decode step (one query) is faster than a prefill step.
device: cpu
operation: {python: ../operations/attention.py, name: attention_causal}
dtype: fp32
axes: {batch: [2], heads: [4], kv_heads: [2], seq_q: [1, 32], seq_k: [32], head_dim: [16]}
passes: [fwd, fwd+bwd]
operating_point: {batch: 2, heads: 4, kv_heads: 2, seq_q: 1, seq_k: 32, head_dim: 16}
arms:
  - {id: numpy, python: ../kernels/python/llm_numpy.py, function: attention}
measurement: {repetitions: 5, warmup: 1}
predictions:
  - {id: P1, claim: "the numpy arm moves the declared bytes at more than 0.001 GB/s at every shape",
     at: {}, expect: "gbps(numpy) > 0.001"}
YAML
cat >"$work/p/protocols/ce_cpu.yaml" <<'YAML'
prereg: 2
id: ce_cpu
title: "Cross-entropy from operations/cross_entropy.py, numpy on the CPU"
hypothesis: "The numpy arm computes the mean cross-entropy and its gradient within tolerance."
device: cpu
operation: {python: ../operations/cross_entropy.py, name: cross_entropy}
dtype: fp32
axes: {rows: [8], vocab: [1000, 5003]}
passes: [fwd, fwd+bwd]
operating_point: {rows: 8, vocab: 5003}
arms:
  - {id: numpy, python: ../kernels/python/llm_numpy.py, function: cross_entropy}
measurement: {repetitions: 5, warmup: 1}
predictions:
  - {id: P1, claim: "more than 0.001 GB/s at 8 x 5003", at: {vocab: 5003}, expect: "gbps(numpy) > 0.001"}
YAML
for p in attn_cpu ce_cpu; do
  expect_exit 0 "$p: check" -- "$PREREG" check "$work/p/protocols/$p.yaml"
  expect_exit 0 "$p: freeze" -- "$PREREG" freeze "$work/p/protocols/$p.yaml"
  hash=$(tail -n 1 "$work/out")
  expect_exit 0 "$p: run" -- "$PREREG" run "$hash" --out "$out" --quiet
  dir=$(tail -n 1 "$work/out")
  expect_exit 0 "$p: its report audits clean" -- "$PREREG" audit "$dir"
  [ "$(json_get "$dir" "all(c['passed'] for c in r['correctness']) and len(r['correctness']) == 4")" = True ] \
    && pass "$p: the numpy arm passes the float64 reference at every cell" \
    || fail "$p correctness: $(json_get "$dir" "r['correctness']")"
  if "$py" -c 'import jsonschema' 2>/dev/null; then
    "$py" "$PREREG_SOURCE_DIR/tests/schemas/validate.py" "$PREREG_SOURCE_DIR/docs/schema" report "$dir/report.json" >"$work/val" 2>&1 \
      && pass "$p: the report holds for report.schema.json" || fail "$p schema: $(head -5 "$work/val")"
  fi
  eval "d_$p=\$dir"
done
# attention: (2 b h sq d + 2 b kvh sk d) s fwd; (4 b h sq d + 4 b kvh sk d) s fwd+bwd
[ "$(json_get "$d_attn_cpu" "sorted((c['pass'], [a['extent'] for a in c['shape']][3], c['bytes_per_step']) for c in r['cells'])")" = \
  "[('fwd', 1, 17408), ('fwd', 32, 49152), ('fwd+bwd', 1, 34816), ('fwd+bwd', 32, 98304)]" ] \
  && pass "attn_cpu: bytes per step follow the declared formulas (decode and prefill)" \
  || fail "attn_cpu bytes: $(json_get "$d_attn_cpu" "[(c['pass'], c['shape'], c['bytes_per_step']) for c in r['cells']]")"
# cross-entropy: rows vocab 4 + 12 rows fwd; 2 rows vocab 4 + 12 rows fwd+bwd
[ "$(json_get "$d_ce_cpu" "sorted((c['pass'], c['shape'][1]['extent'], c['bytes_per_step']) for c in r['cells'])")" = \
  "[('fwd', 1000, 32096), ('fwd', 5003, 160192), ('fwd+bwd', 1000, 64096), ('fwd+bwd', 5003, 320288)]" ] \
  && pass "ce_cpu: bytes per step follow the declared formulas" \
  || fail "ce_cpu bytes: $(json_get "$d_ce_cpu" "[(c['pass'], c['shape'], c['bytes_per_step']) for c in r['cells']]")"
grep -qF '### fwd, vocab = 5003 (operating point: rows=8)' "$d_ce_cpu/report.md" \
  && pass "ce_cpu: report.md has a block per vocab, columns by rows" || fail "ce_cpu headings: $(grep '^###' "$d_ce_cpu/report.md")"
# The shipped GPU protocols (protocols/llm/, not frozen) check here: their operation files read,
# their arms' files import without torch and define the functions the protocols name.
for f in "$PREREG_SOURCE_DIR"/protocols/llm/*.yaml; do
  "$PREREG" check "$f" >"$work/out" 2>"$work/err" || fail "check $(basename "$f"): $(tail -n 2 "$work/err")"
done && pass "every protocol of protocols/llm checks"
finish
