#!/usr/bin/env bash
# Family 6 (issue 43): a key named by `--key FILE` (not the default path, no PREREG_KEY) must be
# masked wherever outside code runs before anything is stored: an arm file imported at
# `freeze --key FILE` reads it, and again at `check` with PREREG_KEY naming it. (A run's
# measuring process masks `run --key FILE` the same way: docs/engine.md.)
source "$SRC/tests/attacks/lib.sh"
other=$WORK/keys/release.key
plant_key "$other"
attack_config "$other"
cat >"$P/arm.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape
escape.loot("import", {"when": "import", "hunt": escape.key_hunt(escape.config()["key"])})

def attack(t):
    return escape.layernorm_step(t)
PY
protocol "$P/p.yaml" attack_key_flag "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze --key "$other" "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
PREREG_KEY=$other run_prereg check "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "check failed (exit $rc): $(head -n 1 "$WORK/err")"
check_no_key
check_loot_has '"when": "import"'
verdict
