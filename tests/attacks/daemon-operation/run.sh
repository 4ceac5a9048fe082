#!/usr/bin/env bash
# Family 2 (issue 43): an operation file that, while it is imported (check, freeze, run), leaves
# a double-forked daemon behind. The daemon hunts for the key (its file, its folder after
# unmounting their masks), tries to ptrace and read the memory of the process that imported
# the file and of that one's parent (prereg), and keeps trying to write into the reports and
# the store until the case ends. prereg must end it with the run: no daemon may outlive prereg.
source "$SRC/tests/attacks/lib.sh"
plant_key
attack_config "$KEY"
marker="prereg-attack-daemon:$WORK"
{
  cat <<PY
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

DAEMON = r'''
import os, sys, time
sys.path.insert(0, sys.argv[2])
import escape
c = escape.config()
targets = [int(p) for p in sys.argv[3].split(",") if p and int(p) > 0]
open(sys.argv[4], "w").close()  # up: the importer waits for this
for round in range(300):  # about a minute, then it gives up (so that nothing lingers forever)
    if os.path.exists(os.path.join(c["loot"], "stop")):
        break
    got = {"round": round, "pid": os.getpid(), "key": escape.read_bytes(c["key"]).decode("latin-1"),
           "unmount": escape.unmount_masks([c["key"], os.path.dirname(c["key"])], 1),
           "ptrace": {p: escape.ptrace_seize(p) for p in targets},
           "vm_read": {p: escape.vm_read(p) for p in targets},
           "write": escape.write_files([os.path.join(c["reports"], "daemon-was-here"),
                                        os.path.join(c["store"], "daemon-was-here")])}
    if round % 25 == 0 or "ok" in got["ptrace"].values() or "ok" in got["vm_read"].values():
        escape.loot("daemon", got)
    time.sleep(0.2)
'''

def _start_daemon():
    import time
    targets = "%d,%d" % (os.getpid(), os.getppid())
    up = os.path.join(escape.config()["loot"], "up-%d-%d" % (os.getpid(), time.monotonic_ns()))
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("$py", ["python3", "-c", DAEMON, "$marker",
                             os.path.dirname(os.path.abspath(__file__)), targets, up])
        os._exit(0)
    for _ in range(500):  # until the daemon runs (so that the case's search cannot miss it)
        if os.path.exists(up):
            break
        time.sleep(0.01)
    escape.loot("operation", {"started_from": os.getpid(), "parent": os.getppid(),
                              "daemon_up": os.path.exists(up)})

_start_daemon()
PY
  cat "$SRC/examples/operations/swiglu.py"
} >"$P/op.py"
operation_protocol "$P/p.yaml" attack_daemon_operation
run_prereg check "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "check failed (exit $rc): $(head -n 1 "$WORK/err")"
check_no_process "$marker"
run_prereg freeze "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
check_no_process "$marker"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(head -n 1 "$WORK/err")"
check_no_process "$marker"
touch "$LOOT/stop"
check_loot_lacks '"(ptrace|vm_read)": \{[^}]*"ok"' "the daemon ptraced or read the memory of a process outside its sandbox"
check_absent "$REPORTS/daemon-was-here" "$PREREG_STORE/daemon-was-here"
check_no_key
check_loot_has '"daemon_up": true'
check_run_clean
verdict
