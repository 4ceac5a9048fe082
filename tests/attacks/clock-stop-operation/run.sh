#!/usr/bin/env bash
# Family 4 (issue 43), an operation file: tampering from beside the clock while it is imported
# (by the loaders of `check` and `freeze`, and at `run` by the operation's loader and the
# measuring process). It forks a helper that tries to stop the process importing it (kill, and a
# descriptor whose readiness signal F_SETSIG is SIGSTOP) and, once the case plants `forge`
# beside it, writes a forged error message on that process's channel. Every stop must be refused
# (EPERM); a forged message fails the command (exit 1) and is never taken; no report is left.
source "$SRC/tests/attacks/lib.sh"
attack_config ""
{
  cat <<'PY'
import errno, fcntl, os, signal, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def _helper(target):
    got = {}
    try:
        os.kill(target, signal.SIGSTOP)
        got["kill"] = "ok"
    except OSError as e:
        got["kill"] = errno.errorcode.get(e.errno, str(e.errno))
    try:
        r, w = os.pipe()
        fcntl.fcntl(r, fcntl.F_SETOWN, target)
        fcntl.fcntl(r, 10, signal.SIGSTOP)  # F_SETSIG
        fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC)
        os.write(w, b"x")
        time.sleep(0.1)
        got["setsig"] = "ok, state " + open(f"/proc/{target}/stat").read().rsplit(")", 1)[1].split()[0]
        r2, w2 = os.pipe()  # continue it the same way
        fcntl.fcntl(r2, fcntl.F_SETOWN, target)
        fcntl.fcntl(r2, 10, signal.SIGCONT)
        fcntl.fcntl(r2, fcntl.F_SETFL, fcntl.fcntl(r2, fcntl.F_GETFL) | os.O_ASYNC)
        os.write(w2, b"x")
    except OSError as e:
        got["setsig"] = errno.errorcode.get(e.errno, str(e.errno))
    fd = escape.channel_fd()
    if fd is not None and os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), "forge")):
        os.write(fd, b'{"error": {"code": 1, "message": "FORGED BY A HELPER", "where": ""}}\n')
        got["forged"] = fd
    escape.loot("operation", got)

_target = os.getpid()
_pid = os.fork()
if _pid == 0:
    try:
        _helper(_target)
    finally:
        os._exit(0)
os.waitpid(_pid, 0)
time.sleep(0.5)  # a forged line is read before this process writes again
PY
  cat "$SRC/examples/operations/swiglu.py"
} >"$P/op.py"
operation_protocol "$P/p.yaml" attack_stop_operation
run_prereg check "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "check failed (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
run_prereg freeze "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
hash=$(tail -n 1 "$WORK/out")
check_loot_has '"setsig"'
check_loot_lacks '"(kill|setsig)": "ok' "the operation file's helper stopped the process that imported it"
touch "$P/forge"
for cmd in check run; do
  if [ $cmd = check ]; then run_prereg check "$P/p.yaml"; else run_prereg run "$hash" --out "$REPORTS" --quiet; fi
  ! grep -q "FORGED BY A HELPER" "$WORK/err" || escape "prereg took the helper's message at $cmd"
  [ "$rc" -eq 1 ] && grep -q "not by the" "$WORK/err" ||
    escape "the forged message did not fail $cmd (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
done
check_loot_has '"forged"'
check_loot_lacks '"(kill|setsig)": "ok' "the operation file's helper stopped the process that imported it"
[ -z "$(find "$REPORTS" -mindepth 2)" ] || escape "a report was left: $(find "$REPORTS" -mindepth 2 | head -n 3)"
run_prereg ledger verify
[ "$rc" -eq 0 ] || escape "the ledger no longer verifies: $(head -n 1 "$WORK/err")"
verdict
