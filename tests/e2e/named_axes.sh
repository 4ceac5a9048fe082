# End-to-end: an operation over three named axes (docs/operations.md, "Axes"). The CPU example
# examples/operations/rotary_cpu.yaml (a batched rotary embedding over b, n, d with a numpy
# float64 reference and two numpy arms) is checked, frozen, run and audited; its cells are keyed
# by shape (schema_version 6), its bytes follow the declared formula, its predictions select by
# axis name and are judged; its pages lay out one block per d and one column per (b, n) and pass
# the browser check; try runs it unfrozen; compare reads two of its reports, and two shards of it
# merge and audit.
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
export PREREG_PYTHON=$py
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: $py has no numpy"; exit 77; }
out=$work/reports
json_get() { "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1/report.json" "$2"; }

cp -r "$PREREG_SOURCE_DIR/examples/operations" "$work/ex"
expect_exit 0 "check reads the protocol over b, n, d" -- "$PREREG" check "$work/ex/rotary_cpu.yaml"
expect_exit 0 "freeze it" -- "$PREREG" freeze "$work/ex/rotary_cpu.yaml"
hash=$(tail -n 1 "$work/out")
expect_exit 0 "run it" -- "$PREREG" run "$hash" --out "$out" --quiet
dir=$(tail -n 1 "$work/out")
expect_exit 0 "its report audits clean" -- "$PREREG" audit "$dir"
grep -q "^PASS pages: report.md and report.html are exactly what renderer" "$work/out" \
  && pass "  ... its pages are what the renderer makes" || fail "audit: $(cat "$work/out")"
[ "$(json_get "$dir" "r['schema_version']")" = 8 ] && pass "the report is schema_version 8 (the CPU's roofs; keyed by shape as 6)" \
  || fail "schema_version $(json_get "$dir" "r['schema_version']")"
[ "$(json_get "$dir" "len(r['cells']), sorted(set(tuple(a['axis'] for a in c['shape']) for c in r['cells'])), any('rows' in c for c in r['cells'])")" = \
  "(16, [('b', 'n', 'd')], False)" ] && pass "16 cells (2 arms x 8 shapes), each keyed by its shape b, n, d" \
  || fail "cells: $(json_get "$dir" "[c.get('shape') for c in r['cells']]")"
# fwd bytes = (2 * b * n * d + 2 * n * d) * 4 at b=4 n=256 d=128: 1310720
[ "$(json_get "$dir" "[c['bytes_per_step'] for c in r['cells'] if [a['extent'] for a in c['shape']] == [4, 256, 128]]")" = "[1310720, 1310720]" ] \
  && pass "bytes per step follow the declared formula at b=4 n=256 d=128" \
  || fail "bytes: $(json_get "$dir" "[(c['shape'], c['bytes_per_step']) for c in r['cells']]")"
[ "$(json_get "$dir" "all(c['passed'] for c in r['correctness']) and len(r['correctness']) == 16")" = True ] \
  && pass "both numpy arms pass the float64 reference at every shape" || fail "correctness: $(json_get "$dir" "r['correctness']")"
[ "$(json_get "$dir" "[(p['id'], p['verdict'] in ('confirmed', 'refuted', 'inconclusive'), [[a['extent'] for a in c['shape']] for c in p['cells']]) for p in r['predictions']]")" = \
  "[('P1', True, [[4, 256, 128]]), ('P2', True, [[1, 64, 128], [1, 256, 128], [4, 64, 128], [4, 256, 128]])]" ] \
  && pass "the predictions select their cells by axis name (at: {b, n, d}; at: {d}) and are judged" \
  || fail "predictions: $(json_get "$dir" "r['predictions']")"
if "$py" -c 'import jsonschema' 2>/dev/null; then
  "$py" "$PREREG_SOURCE_DIR/tests/schemas/validate.py" "$PREREG_SOURCE_DIR/docs/schema" report "$dir/report.json" >"$work/val" 2>&1 \
    && pass "the report holds for report.schema.json" || fail "schema: $(head -5 "$work/val")"
fi

# The pages: one block per extent of d, one column per (b, n), the shapes in the labels.
md=$dir/report.md
grep -qF '### fwd, d = 128 (operating point: b=4 n=256)' "$md" && pass "report.md: a block per d, the operating point named" \
  || fail "report.md headings: $(grep '^###' "$md")"
grep -qF '| arm | b=1 n=64 | b=1 n=256 | b=4 n=64 | **b=4 n=256** ◀ operating point |' "$md" \
  && pass "report.md: a column per (b, n), the operating point marked" || fail "report.md tables: $(grep '^| arm |' "$md" | head -3)"
grep -qF '| shapes | b 1, 4 × n 64, 256 × d 64, 128 |' "$md" && grep -qF '| fwd b=4 n=256 d=128 |' "$md" \
  && pass "report.md: the design's shapes by axis and the predictions' cells by shape" || fail "report.md: $(grep -E 'shapes|fwd b=' "$md" | head -3)"
grep -qF 'class="alabel">b, n (d = 128)</text>' "$dir/report.html" && pass "report.html: the charts' x axis names the axes" \
  || fail "report.html: no named x axis"
rc=0
"$PREREG_SOURCE_DIR/tests/browser/check_report.sh" "$dir/report.html" "$work/shot.png" >"$work/browser" 2>&1 || rc=$?
case $rc in
  0) pass "the browser check passes on report.html" ;;
  77) echo "skipped: the browser check (no chromium or node)" ;;
  *) fail "browser check: $(grep -E '^FAIL|FAILED' "$work/browser" | head -5)" ;;
esac

# try runs it unfrozen: an EXPLORATORY report over the same cells, its pages drawn alike.
expect_exit 0 "try the protocol file" -- "$PREREG" try "$work/ex/rotary_cpu.yaml" --out "$work/exploratory" --quiet
tdir=$(tail -n 1 "$work/out")
[ "$(json_get "$tdir" "(r['exploratory'], r['schema_version'], len(r['cells']))")" = "(True, 8, 16)" ] \
  && grep -qF '| arm | b=1 n=64 | b=1 n=256 | b=4 n=64 |' "$tdir/report.md" \
  && pass "  ... an exploratory schema_version 8 report of 16 cells, its pages by shape" \
  || fail "try: $(json_get "$tdir" "(r.get('exploratory'), r['schema_version'], len(r['cells']))")"

# compare reads two reports over named axes, cell by cell.
expect_exit 0 "a second run" -- "$PREREG" run "$hash" --out "$out" --quiet
dir2=$(tail -n 1 "$work/out")
expect_exit 0 "compare the two runs" -- "$PREREG" compare "$dir" "$dir2"
grep -qE '^halves fwd b=4 n=256 d=128 ' "$work/out" && [ "$(grep -cE '^(eager|halves) fwd b=' "$work/out")" -eq 16 ] \
  && pass "  ... one line per cell, labelled by shape" || fail "compare: $(head -12 "$work/out")"

# Two shards (docs/scale-out.md) of it: each audits, and their merge audits.
for k in 1 2; do
  expect_exit 0 "shard $k/2" -- "$PREREG" run "$hash" --shard "$k/2" --out "$work/shards" --quiet
  shard[k]=$(tail -n 1 "$work/out")
done
expect_exit 0 "merge the two shards" -- "$PREREG" merge "${shard[1]}" "${shard[2]}" --out "$work/merged"
merged=$(tail -n 1 "$work/out")
expect_exit 0 "the merged report audits clean" -- "$PREREG" audit "$merged"
grep -qF '| eager | fwd | b=4 n=256 d=128 |' "$merged/report.md" && pass "  ... its cells table names each shape" \
  || fail "merged page: $(grep -A3 '## Cells' "$merged/report.md")"
if "$py" -c 'import jsonschema' 2>/dev/null; then
  "$py" "$PREREG_SOURCE_DIR/tests/schemas/validate.py" "$PREREG_SOURCE_DIR/docs/schema" merged "$merged/report.json" >"$work/val" 2>&1 \
    && pass "  ... and holds for merged-report.schema.json" || fail "merged schema: $(head -5 "$work/val")"
fi
finish
