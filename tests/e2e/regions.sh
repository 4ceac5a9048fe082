# End-to-end: named regions inside a Python arm's step (docs/python-arms.md, "Regions") on the
# CPU: per-sample region times in the raw cell, shares with intervals, share() in expect, the
# audit recomputing them, and no regions field for arms that mark none.
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
export PREREG_PYTHON=$py
if ! "$py" -c 'import numpy' 2>/dev/null; then echo "skip: $py has no numpy"; exit 77; fi
data=$PREREG_SOURCE_DIR/tests/data/python
out=$work/reports
q() { "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); cells={(c['arm'],c['rows']):c for c in r['cells']}; print(eval(sys.argv[2]))" "$1/report.json" "$2"; }

# Its badlabel arm fails on purpose (its report shows the failure): the dry run refuses it first.
expect_exit 2 "the dry run refuses the bad-label arm" -- "$PREREG" check "$data/protocol_regions.yaml"
expect_err "^prereg: error: dry run: arm badlabel .*the label 'has space' is not" "  ... naming the arm and the label"
expect_exit 0 "check the regions protocol without the dry run" -- "$PREREG" check "$data/protocol_regions.yaml" --no-dry-run
expect_exit 0 "freeze it" -- "$PREREG" freeze "$data/protocol_regions.yaml" --no-dry-run
hash=$(tail -n 1 "$work/out")
expect_exit 0 "run it" -- "$PREREG" run "$hash" --out "$out" --quiet
dir=$(tail -n 1 "$work/out")
expect_exit 0 "its report audits clean (shares recomputed)" -- "$PREREG" audit "$dir"

for rows in 16 256; do
  [ "$(q "$dir" "sorted(cells[('marked',$rows)]['regions'])")" = "['normalise', 'stats']" ] \
    && pass "marked at $rows rows records both regions" || fail "regions at $rows: $(q "$dir" "cells[('marked',$rows)].get('regions')")"
  [ "$(q "$dir" "all(len(v)==cells[('marked',$rows)]['n'] for v in cells[('marked',$rows)]['regions'].values())")" = True ] \
    && pass "one region time per sample at $rows rows" || fail "region lengths at $rows"
  # A region is inside the step: its time cannot exceed the sample's (not a timing claim: an invariant).
  [ "$(q "$dir" "all(a+b <= s for s,a,b in zip(cells[('marked',$rows)]['samples_ms'], cells[('marked',$rows)]['regions']['stats'], cells[('marked',$rows)]['regions']['normalise']))")" = True ] \
    && pass "the regions' sum is within each sample at $rows rows" || fail "a region exceeds its sample at $rows"
  [ "$(q "$dir" "all(v['lo_pct'] <= v['share_pct'] <= v['hi_pct'] <= 100 and v['lo_pct'] >= 0 for v in cells[('marked',$rows)]['region_shares'].values())")" = True ] \
    && pass "each share lies in its interval within 0..100 at $rows rows" || fail "shares: $(q "$dir" "cells[('marked',$rows)]['region_shares']")"
  [ "$(q "$dir" "'regions' in cells[('plain',$rows)] or 'region_shares' in cells[('plain',$rows)] or 'regions' in cells[('builtin',$rows)]")" = False ] \
    && pass "arms without regions have no regions field at $rows rows" || fail "plain/builtin carry regions"
  [ "$(q "$dir" "sorted(cells[('repeated',$rows)]['regions'])")" = "['half']" ] \
    && pass "a label opened twice is one region at $rows rows" || fail "repeated: $(q "$dir" "cells[('repeated',$rows)].get('regions')")"
done
q "$dir" "[d['message'] for d in r['deviations'] if d['kind']=='arm-error' and d.get('cell',{}).get('arm')=='badlabel']" | grep -q "is not 1 to 64 of" \
  && pass "a bad label is an arm-error naming the rule" || fail "deviations: $(q "$dir" "r['deviations']")"
[ "$(q "$dir" "{p['id']: p['verdict'] for p in r['predictions']}")" = "{'R1': 'confirmed', 'R2': 'inconclusive', 'R3': 'inconclusive'}" ] \
  && pass "share() verdicts: confirmed; a missing label and an arm without regions inconclusive" \
  || fail "predictions: $(q "$dir" "[(p['id'], p['verdict'], p['reason']) for p in r['predictions']]")"
q "$dir" "[p['reason'] for p in r['predictions'] if p['id']=='R2'][0]" | grep -q 'arm marked has no region "attention"' \
  && pass "the inconclusive reason names the missing region" || fail "R2 reason: $(q "$dir" "[p['reason'] for p in r['predictions'] if p['id']=='R2']")"
if "$py" -c 'import jsonschema' 2>/dev/null; then
  "$py" "$PREREG_SOURCE_DIR/tests/schemas/validate.py" "$PREREG_SOURCE_DIR/docs/schema" report "$dir/report.json" >"$work/val" 2>&1 \
    && pass "the report with regions validates against report.schema.json" || fail "schema: $(grep -v '^ok' "$work/val" | head -3)"
fi
grep -q "Region shares" "$dir/report.md" && pass "report.md shows the region shares" || fail "no region shares in report.md"

# share() is prereg: 2 only
cat >"$work/v1.yaml" <<'YAML'
prereg: 1
id: e2e_regions_v1
title: share in schema 1
hypothesis: refused
device: cpu
operation: layernorm
dtype: fp32
shapes: {rows: [16], cols: [256]}
passes: [fwd]
arms:
  - {id: fused, kernel: layernorm.fused}
measurement: {repetitions: 5, warmup: 1}
predictions:
  - id: P1
    claim: refused
    expect: share(fused, "stats") > 0
YAML
expect_exit 2 "a prereg: 1 protocol cannot use share()" -- "$PREREG" check "$work/v1.yaml"
expect_err 'needs prereg: 2' "the refusal says share needs prereg: 2"
finish
