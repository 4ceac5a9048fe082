#!/usr/bin/env bash
# Family 7 (issue 43): a Python arm writes 32 MiB without a line end on the measuring process's
# channel (under the limit) and then keeps the channel open forever. SIGINT, and in a second run
# SIGTERM, sent to prereg while it reads must end the run: exit not 0, a run-aborted entry in
# the ledger, no report left behind, the ledger verifying, no process left.
source "$SRC/tests/attacks/lib.sh"
attack_config ""
cat >"$P/arm.py" <<'PY'
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def attack(t):
    fd = escape.channel_fd()
    if fd is not None:
        block = b"x" * (1 << 20)
        os.write(fd, b'{"phase": "')
        for _ in range(32):
            os.write(fd, block)
    escape.loot("python", {"flooded": fd})
    while True:
        time.sleep(1)
PY
MEASUREMENT_EXTRA="  call_timeout_s: 3600" protocol "$P/p.yaml" attack_flood_signal "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test (the dry run would call the arm too)
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
hash=$(tail -n 1 "$WORK/out")
for sig in INT TERM; do
  timeout -k 5 420 "$PREREG" run "$hash" --out "$REPORTS" --quiet >"$WORK/out" 2>"$WORK/err" &
  pid=$!
  for _ in $(seq 3000); do # until the flood is on the channel (the arm says so on stderr)
    grep -qs '"flooded"' "$WORK/err" && break
    sleep 0.1
  done
  collect_loot "$WORK/err"
  sleep 0.5
  pgrep -P "$pid" >/dev/null && kill -s "$sig" "$(pgrep -P "$pid" | head -n 1)" # prereg, under timeout
  wait "$pid"
  rc=$?
  cat "$WORK/out" "$WORK/err" >>"$WORK/all.out"
  check_loot_has '"flooded"'
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || escape "SIG$sig did not end prereg while the channel flooded"
  [ "$rc" -ne 0 ] || escape "the run interrupted by SIG$sig exited 0"
  check_last_ledger_event run-aborted
  [ -z "$(find "$REPORTS" -mindepth 2)" ] || escape "a report was left after SIG$sig: $(find "$REPORTS" -mindepth 2 | head -n 3)"
  rm -f "$LOOT/python.json"
done
run_prereg ledger verify
[ "$rc" -eq 0 ] || escape "the ledger no longer verifies: $(head -n 1 "$WORK/err")"
check_no_process "$hash"
verdict
