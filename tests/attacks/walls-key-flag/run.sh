#!/usr/bin/env bash
# Family 6 (issue 43): a key named by `--key FILE` (not the default path, no PREREG_KEY) must be
# masked wherever outside code runs: an arm file imported at `freeze --key FILE` reads it, and
# so does the arm in the run's measuring process (`run --key FILE`) and in `check` with
# PREREG_KEY naming it.
source "$SRC/tests/attacks/lib.sh"
other=$WORK/keys/release.key
plant_key "$other"
attack_config "$other"
cat >"$P/arm.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape
escape.loot("import", {"pid": os.getpid(), "hunt": escape.key_hunt(escape.config()["key"])})

def attack(t):
    escape.loot("setup", {"hunt": escape.key_hunt(escape.config()["key"])})
    return escape.layernorm_step(t)
PY
protocol "$P/p.yaml" attack_key_flag "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze --key "$other" "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
hash=$(tail -n 1 "$WORK/out")
PREREG_KEY=$other run_prereg check "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "check failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$hash" --key "$other" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(head -n 1 "$WORK/err")"
check_loot_has '"hunt"'
check_loot_has '"setup"'
check_no_key
check_run_clean
verdict
