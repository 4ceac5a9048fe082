#!/usr/bin/env bash
# Family 1 (issue 43): outside code reaches for the processes around it: an operation file,
# while `check` imports it, ptraces (PTRACE_SEIZE), reads the memory of (process_vm_readv) and
# may-signals (kill 0) the process that imports it and that one's parent (prereg); a Python arm
# in the measuring process does the same to the namespace's init and, from a helper it forks,
# to the measuring process itself (its parent).
source "$SRC/tests/attacks/lib.sh"
plant_key
attack_config "$KEY"
cat >"$P/reach.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def reach(pids):
    pids = [p for p in pids if p > 0 and p != os.getpid()]
    return {"ptrace": {p: escape.ptrace_seize(p) for p in pids},
            "vm_read": {p: escape.vm_read(p) for p in pids},
            "signal": {p: escape.signal_probe(p) for p in pids}}

def from_helper(pids):
    """reach() from a forked child (its parent: this process)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        import json
        os.write(w, json.dumps(reach(pids + [os.getppid()])).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    return data.decode()
PY
{
  cat <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape, reach
ppid = os.getppid()
escape.loot("operation", {"pid": os.getpid(), "ppid": ppid,
                          "reach": reach.reach([ppid, 1]), "helper": reach.from_helper([ppid, 1])})
PY
  cat "$SRC/examples/operations/swiglu.py"
} >"$P/op.py"
cat >"$P/arm.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape, reach

def attack(t):
    escape.loot("arm", {"pid": os.getpid(), "reach": reach.reach([os.getppid(), 1]),
                        "helper": reach.from_helper([1])})
    return escape.layernorm_step(t)
PY
operation_protocol "$P/op.yaml" attack_ptrace_operation
protocol "$P/p.yaml" attack_ptrace "  - id: attacker
    python: arm.py
    function: attack"
run_prereg check "$P/op.yaml"
[ "$rc" -eq 0 ] || escape "check failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg freeze "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(head -n 1 "$WORK/err")"
"$py" - "$LOOT" >"$WORK/reach.txt" <<'PY'
import json, os, sys
for name in ("operation", "arm"):
    path = os.path.join(sys.argv[1], name + ".json")
    if not os.path.exists(path):
        print(f"the {name} attacker left no loot"); sys.exit(0)
    for line in open(path):
        r = json.loads(line)
        for where, got in (("itself", r["reach"]), ("a helper it forked", json.loads(r["helper"]))):
            for what in ("ptrace", "vm_read", "signal"):
                for pid, outcome in got[what].items():
                    if outcome == "ok":
                        print(f"the {name} ({where}) could {what} pid {pid}"); sys.exit(0)
PY
[ ! -s "$WORK/reach.txt" ] || escape "$(head -n 1 "$WORK/reach.txt")"
check_no_key
check_loot_has '"reach"'
check_run_clean
verdict
