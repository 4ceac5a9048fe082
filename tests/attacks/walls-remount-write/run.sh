#!/usr/bin/env bash
# Family 1 (issue 43): a Python arm clears read-only on the mounts (mount_setattr and a bind
# remount of /, the store, the reports folder and the project, in the measuring process and in
# new namespaces of its own) and writes into the store, its ledger, the reports folder, the
# project and a system folder.
source "$SRC/tests/attacks/lib.sh"
plant_key
attack_config "$KEY"
system=/var/lib/prereg-attack-$$-planted # written only if the walls fall (removed again below)
trap 'rm -f "$system"' EXIT
cat >"$P/arm.py" <<PY
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def attack(t):
    c = escape.config()
    mounts = ["/", c["store"], c["reports"], c["project"], "/var/lib", "/var"]
    targets = [os.path.join(c["store"], "planted"), os.path.join(c["store"], "ledger.jsonl"),
               os.path.join(c["reports"], "planted"), os.path.join(c["project"], "planted"),
               "$system"]
    def both():
        return {"clear": escape.clear_read_only(mounts), "write": escape.write_files(targets)}
    escape.loot("python", {"here": both(), "new_namespaces": escape.in_new_namespaces(both)})
    return escape.layernorm_step(t)
PY
protocol "$P/p.yaml" attack_remount "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(head -n 1 "$WORK/err")"
check_absent "$PREREG_STORE/planted" "$REPORTS/planted" "$P/planted" "$system"
grep -q "planted by an attacker" "$PREREG_STORE/ledger.jsonl" && escape "the attacker appended to the ledger"
check_no_key
check_loot_has '"clear"'
check_run_clean
verdict
