#!/usr/bin/env bash
# Family 7 (issue 43): a Python arm's step never returns. The watchdog (measurement.call_timeout_s,
# here 2 s) stops it: the arm's cells fail, the run completes in a fresh measuring process, its
# report is signed and audits clean, and the built-in arm's prediction is still judged.
source "$SRC/tests/attacks/lib.sh"
attack_config ""
cat >"$P/arm.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def attack(t):
    escape.loot("python", {"stuck": "planted"})
    def step():
        escape.never_return()
    return step
PY
MEASUREMENT_EXTRA="  call_timeout_s: 2" protocol "$P/p.yaml" attack_stuck "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test (the dry run would call the arm too)
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
hash=$(tail -n 1 "$WORK/out")
PREREG_ATTACK_WATCHDOG=120 run_prereg run "$hash" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run did not complete (exit $rc): $(head -n 1 "$WORK/err")"
check_loot_has '"stuck"'
[ "$(report_get "[s['arm'] for s in r['run']['watchdog']['stuck']]")" = "['attacker']" ] ||
  escape "the report's watchdog does not name the stuck arm: $(report_get "r['run'].get('watchdog')")"
[ "$(report_get "all(c['error'] for c in r['cells'] if c['arm']=='attacker')")" = True ] ||
  escape "the stuck arm's cells did not fail"
check_judged
check_no_process "$hash"
check_run_clean
verdict
