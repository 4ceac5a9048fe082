#!/usr/bin/env bash
# Family 4 (issue 43): a Python arm forks a relay that writes a well-formed message on the
# measuring process's channel (an error message that would end the run with its own words). The
# kernel names each chunk's sender (SO_PASSCRED): prereg fails the run because the bytes came from
# another process, never takes the forged message, and records the run as aborted.
source "$SRC/tests/attacks/lib.sh"
attack_config ""
cat >"$P/arm.py" <<'PY'
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def attack(t):
    fd = escape.channel_fd()
    escape.loot("python", {"relay": fd})
    if fd is not None:
        pid = os.fork()
        if pid == 0:
            os.write(fd, b'{"error": {"code": 1, "message": "FORGED BY A RELAY", "where": ""}}\n')
            os._exit(0)
        os.waitpid(pid, 0)
        time.sleep(1)  # the relay's line is read before the measuring process writes again
    return escape.layernorm_step(t)
PY
protocol "$P/p.yaml" attack_relay "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test (the dry run would call the arm too)
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
check_loot_has '"relay"'
! grep -q "FORGED BY A RELAY" "$WORK/err" || escape "prereg took the relay's message as the measuring process's"
[ "$rc" -eq 1 ] || escape "the relay's bytes did not fail the run (exit $rc)"
grep -q "not by the measuring process" "$WORK/err" ||
  escape "the run did not fail for the foreign sender: $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
check_last_ledger_event run-aborted
[ -z "$(find "$REPORTS" -mindepth 2)" ] || escape "a report was left: $(find "$REPORTS" -mindepth 2 | head -n 3)"
verdict
