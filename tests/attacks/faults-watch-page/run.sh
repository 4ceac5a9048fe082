#!/usr/bin/env bash
# Family 7 (issue 43; issue 48's hang): a Python arm writes the watch page its measuring process
# shares with prereg (found in /proc/self/maps), so that the watchdog, which reads the page, never
# sees its call run long. `clear`: its step zeroes the page, then never returns; `forge`: a thread
# of its own writes a fresh start on the page every 20 ms while its step never returns. Both hung
# the run (and `check`'s dry run) for ever before the parent's own bounds (docs/engine.md, "The
# parent's bounds"): the silence limit (PREREG_SILENCE_S=8 here) ends `clear`, the count of calls
# the plan can make ends `forge`. Each time: `check` fails with exit 2, the run with exit 1 and a
# run-aborted entry naming the bound, no report, nothing of the attacker's left running.
source "$SRC/tests/attacks/lib.sh"
attack_config ""
export PREREG_SILENCE_S=8 # above any honest stretch of the built-in arm's run on a loaded 2-core machine
cat >"$P/arm.py" <<'PY'
import ctypes, os, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape
_HERE = os.path.dirname(os.path.abspath(__file__))

def attack(t):
    mode = "forge" if os.path.exists(os.path.join(_HERE, "forge")) else "clear"
    def step():
        pages = escape.watch_pages()
        escape.loot("python", {mode: len(pages)})
        if mode == "clear":
            for p in pages:
                ctypes.c_int64.from_address(p).value = 0  # started_ns: no call in progress
        else:
            def forge():
                while True:
                    for p in pages:
                        ctypes.c_int64.from_address(p).value = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                    time.sleep(0.02)
            threading.Thread(target=forge, daemon=True).start()
        escape.never_return()
    return step
PY
MEASUREMENT_EXTRA="  call_timeout_s: 2" protocol "$P/p.yaml" attack_watch_page "  - id: attacker
    python: arm.py
    function: attack"
for mode in clear forge; do
  rm -f "$P/clear" "$P/forge"
  touch "$P/$mode"
  PREREG_ATTACK_WATCHDOG=90 run_prereg check "$P/p.yaml"
  [ "$rc" -eq 2 ] && grep -q "the process that loads outside code .*it was killed" "$WORK/err" ||
    escape "$mode: check's dry run did not end at the parent's bounds (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
  run_prereg freeze "$P/p.yaml" --no-dry-run
  [ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
  hash=$(tail -n 1 "$WORK/out")
  PREREG_ATTACK_WATCHDOG=90 run_prereg run "$hash" --out "$REPORTS" --quiet
  [ "$rc" -eq 1 ] && grep -q "the measuring process (pid [0-9]*) .*it was killed and the run failed" "$WORK/err" ||
    escape "$mode: the run did not end at the parent's bounds (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
  check_last_ledger_event run-aborted
  check_no_process "$hash"
done
check_loot_has '"clear"'
check_loot_has '"forge"'
left=$(find "$REPORTS" -name report.json | head -n 1)
[ -z "$left" ] || escape "a run that never finished left a report: ${left#"$REPORTS"/}"
grep -q "showed no call of outside code and sent nothing" "$WORK/all.out" ||
  escape "no run ended at the silence limit"
grep -q "announced more calls of outside code than its plan can make\|announced a call that started" "$WORK/all.out" ||
  escape "no run ended at the count of calls"
verdict
