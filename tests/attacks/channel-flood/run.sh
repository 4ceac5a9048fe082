#!/usr/bin/env bash
# Family 7 (issue 43): a Python arm writes one 80 MiB message on the measuring process's channel
# (a progress message whose phase name never ends; closed, it would be valid). The channel's
# limit on a message fails the run at once (exit 1) with one line; the ledger records the run as
# aborted, no report is left half-written, and the ledger still verifies.
source "$SRC/tests/attacks/lib.sh"
attack_config ""
cat >"$P/arm.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def attack(t):
    fd = escape.channel_fd()
    escape.loot("python", {"flood": fd})
    if fd is not None:
        block = b"x" * (1 << 20)
        os.write(fd, b'{"phase": "')
        for _ in range(80):
            os.write(fd, block)
        os.write(fd, b'"}\n')
    return escape.layernorm_step(t)
PY
protocol "$P/p.yaml" attack_flood "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test (the dry run would call the arm too)
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
PREREG_ATTACK_WATCHDOG=120 run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
check_loot_has '"flood"'
[ "$rc" -eq 1 ] || escape "the flood did not fail the run (exit $rc)"
grep -q "without a line end" "$WORK/err" ||
  escape "the run did not end at the channel's limit: $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1 | cut -c1-200)"
[ "$(grep -vc '^PREREG-LOOT' "$WORK/err")" -le 2 ] || escape "prereg said more than a line or two: $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 3 | cut -c1-200)"
check_last_ledger_event run-aborted
[ -z "$(find "$REPORTS" -mindepth 2)" ] || escape "a report was left: $(find "$REPORTS" -mindepth 2 | head -n 3)"
run_prereg ledger verify
[ "$rc" -eq 0 ] || escape "the ledger no longer verifies: $(head -n 1 "$WORK/err")"
verdict
