#!/usr/bin/env bash
# Family 7 (issue 43): a Python arm fails with a message holding bidirectional controls (a
# right-to-left override U+202E, an isolate U+2066, the Arabic letter mark U+061C), which would
# reorder what the report's pages and prereg's terminal lines show. They must appear escaped
# (`\u202e`), never raw.
source "$SRC/tests/attacks/lib.sh"
attack_config ""
cat >"$P/arm.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def attack(t):
    escape.loot("python", {"bidi": "raised"})
    def step():
        raise RuntimeError("builtin is \u202efaster\u202c than \u2066this\u2069 arm\u061c")
    return step
PY
protocol "$P/p.yaml" attack_bidi "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test (the dry run would call the arm too)
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS"
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(head -n 1 "$WORK/err")"
check_loot_has '"bidi"'
check_bidi_escaped
check_run_clean
verdict
