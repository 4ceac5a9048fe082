#!/usr/bin/env bash
# Family 4 (issue 43): tampering from beside the clock. A helper the arm forks tries to stop the
# measuring process (SIGSTOP, then SIGCONT); and a process of the same user outside the sandbox
# (this script) stops and continues the measuring process while the arm's step runs (the step
# returns once it sees it was stopped). The helper must be refused, and every stop from outside
# must be seen: the cell is flagged measuring-process-stopped and the claim the stops make true
# (the arm takes over 50 ms) is not confirmed.
source "$SRC/tests/attacks/lib.sh"
attack_config ""
cat >"$P/arm.py" <<'PY'
import errno, os, signal, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def _helper_stop():
    """A forked helper stops and continues its parent (the measuring process)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        got = []
        for sig in (signal.SIGSTOP, signal.SIGCONT):
            try:
                os.kill(os.getppid(), sig)
                got.append("ok")
            except OSError as e:
                got.append(errno.errorcode.get(e.errno, str(e.errno)))
        os.write(w, ",".join(got).encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    return os.read(r, 100).decode()

def attack(t):
    escape.loot("python", {"helper_stop": _helper_stop()})
    def step():
        escape.loot_line("steps.txt", "in step")
        last = start = time.monotonic()
        while time.monotonic() - start < 20:  # until it was stopped (a gap), at most 20 s
            now = time.monotonic()
            if now - last > 0.05:
                break
            last = now
        return escape.layernorm_step(t)()
    return step
PY
CLAIM="the arm takes over 50 ms" EXPECT="time(attacker) > 50" \
  protocol "$P/p.yaml" attack_sigstop "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test (the dry run would call the arm too)
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
hash=$(tail -n 1 "$WORK/out")
timeout -k 5 300 "$PREREG" run "$hash" --out "$REPORTS" --quiet >"$WORK/out" 2>"$WORK/err" &
pid=$!
# While prereg runs: each time the arm's step says it runs, stop its process (a descendant of
# prereg that is running) for 0.2 s.
seen=0
while kill -0 "$pid" 2>/dev/null; do
  n=$(grep -c '^PREREG-LOOT steps.txt' "$WORK/err" 2>/dev/null)
  if [ "${n:-0}" -gt "$seen" ]; then
    seen=$n
    for p in $(pgrep -f -- "run $hash"); do
      [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = R ] || continue
      kill -STOP "$p" 2>/dev/null && sleep 0.2 && kill -CONT "$p" 2>/dev/null
    done
  fi
  sleep 0.05
done
wait "$pid"
rc=$?
cat "$WORK/out" "$WORK/err" >>"$WORK/all.out"
collect_loot "$WORK/err"
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
REPORT=$(tail -n 1 "$WORK/out")
check_loot_has '"helper_stop"'
grep -qs '"helper_stop": "EPERM,EPERM"' "$LOOT/python.json" ||
  escape "a helper the arm forked signalled the measuring process: $(grep -o '"helper_stop": "[^"]*"' "$LOOT/python.json")"
check_not_confirmed P1
[ "$(report_get "any(d['code']=='measuring-process-stopped' and d['cell']['arm']=='attacker' for d in r['defects'])")" = True ] ||
  escape "the stops during the arm's samples were not flagged: $(report_get "[d['code'] for d in r['defects']]")"
check_run_clean
verdict
