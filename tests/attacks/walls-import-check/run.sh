#!/usr/bin/env bash
# Family 1 (issue 43): an arm file that escapes while `prereg check` imports it (which must
# store nothing): it unmounts the key's masks and reads the key, clears read-only and writes a
# ledger and a protocol into the store, a file into the project and into the reports folder.
source "$SRC/tests/attacks/lib.sh"
plant_key
attack_config "$KEY"
cat >"$P/arm.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape
c = escape.config()

def _escape():
    out = {"key": escape.key_hunt(c["key"]), "clear": escape.clear_read_only(["/", c["project"]])}
    try:
        os.makedirs(os.path.join(c["store"], "protocols", "forged"), exist_ok=True)
        out["mkdir"] = "ok"
    except OSError as e:
        out["mkdir"] = str(e)
    out["write"] = escape.write_files([os.path.join(c["store"], "ledger.jsonl"),
                                       os.path.join(c["project"], "planted"),
                                       os.path.join(c["reports"], "planted")])
    return out

try:
    loot = _escape()
except Exception as e:  # the attacker records every refusal
    loot = {"error": repr(e)}
escape.loot("import", {"at_import": loot, "new_namespaces": escape.in_new_namespaces(_escape)})

def attack(t):
    return escape.layernorm_step(t)
PY
protocol "$P/p.yaml" attack_import_check "  - id: attacker
    python: arm.py
    function: attack"
run_prereg check "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "check failed (exit $rc): $(head -n 1 "$WORK/err")"
check_no_store
check_absent "$P/planted" "$REPORTS/planted"
check_no_key
check_loot_has '"at_import"'
verdict
