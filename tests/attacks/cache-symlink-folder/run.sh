#!/usr/bin/env bash
# Family 5 (issue 43): a Python arm replaces the verified-prefix cache's folder
# (~/.cache/prereg/verified) by a symlink to a world-writable folder elsewhere. The key-holding
# parent (the run's end, a later `ledger verify`) must not follow it: the folder keeps its mode
# and nothing is written into it.
source "$SRC/tests/attacks/lib.sh"
plant_key
attack_config "$KEY"
victim=$WORK/victim # world-writable, like /tmp
mkdir -p "$victim" && chmod 1777 "$victim"
cat >"$P/arm.py" <<PY
import os, shutil, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def _swap():
    c = escape.config()
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(c["home"], ".cache")
    out = {}
    for folder in (os.path.join(home, "prereg", "verified"), os.path.join(home, "prereg")):
        try:
            if os.path.islink(folder) or os.path.isfile(folder):
                os.unlink(folder)
            elif os.path.isdir(folder):
                shutil.rmtree(folder)
            os.makedirs(os.path.dirname(folder), exist_ok=True)
            os.symlink("$victim", folder)
            out[folder] = "swapped"
            break
        except OSError as e:
            out[folder] = "refused " + str(e)
    return out

def attack(t):
    escape.loot("python", {"swap": _swap()})
    return escape.layernorm_step(t)
PY
protocol "$P/p.yaml" attack_cache_symlink "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg ledger verify
[ "$rc" -eq 0 ] || escape "the ledger no longer verifies: $(head -n 1 "$WORK/err")"
[ "$(stat -c %a "$victim")" = 1777 ] || escape "the parent changed a folder outside the sandbox to mode $(stat -c %a "$victim") through a symlinked cache folder"
[ -z "$(ls -A "$victim")" ] || escape "the parent wrote $(ls "$victim" | head -n 1) into a folder outside the sandbox through a symlinked cache folder"
check_no_key
check_loot_has '"swap"'
check_run_clean
verdict
