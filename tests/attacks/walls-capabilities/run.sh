#!/usr/bin/env bash
# Family 1 (issue 43): what a Python arm holds: its capabilities (effective, permitted,
# bounding, ambient), no_new_privs and seccomp, read from /proc/self/status when its file is
# imported at `check` and when it is set up in the measuring process. Every capability set must
# be empty, no_new_privs set and a seccomp filter in place.
source "$SRC/tests/attacks/lib.sh"
plant_key
attack_config "$KEY"
cat >"$P/arm.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape
escape.loot("caps", {"when": "import", "status": escape.capabilities()})

def attack(t):
    escape.loot("caps", {"when": "setup", "status": escape.capabilities()})
    return escape.layernorm_step(t)
PY
protocol "$P/p.yaml" attack_caps "  - id: attacker
    python: arm.py
    function: attack"
run_prereg check "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "check failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg freeze "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(head -n 1 "$WORK/err")"
verdict_line=$("$py" - "$LOOT/caps.json" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    s = r["status"]
    for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        if int(s.get(k, "1"), 16) != 0:
            print(f"the arm held capabilities at {r['when']}: {k} {s.get(k)}")
            sys.exit(0)
    if s.get("NoNewPrivs") != "1":
        print(f"no_new_privs was not set at {r['when']}")
        sys.exit(0)
    if s.get("Seccomp") != "2":
        print(f"no seccomp filter at {r['when']} (Seccomp: {s.get('Seccomp')})")
        sys.exit(0)
PY
)
[ -z "$verdict_line" ] || escape "$verdict_line"
check_loot_has '"setup"'
check_loot_has '"import"'
check_run_clean
verdict
