#!/usr/bin/env bash
# Family 1 (issue 43): a Python arm unmounts the masks over the key file and its folder (in the
# measuring process, and again in new user and mount namespaces of its own) and reads the key.
source "$SRC/tests/attacks/lib.sh"
plant_key
attack_config "$KEY"
cat >"$P/arm.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def attack(t):
    escape.loot("python", {"hunt": escape.key_hunt(escape.config()["key"])})
    return escape.layernorm_step(t)
PY
protocol "$P/p.yaml" attack_unmount "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(head -n 1 "$WORK/err")"
check_no_key
check_loot_has '"hunt"'
check_run_clean
verdict
