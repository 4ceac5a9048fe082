#!/usr/bin/env bash
# Family 4 (issue 43), a C plugin: tampering from beside the clock (attacker.c). A helper its
# setup forks tries to stop the measuring process by every signal path it knows (kill, tgkill,
# rt_sigqueueinfo, a pidfd, a descriptor's readiness signal F_SETSIG), the setup clones a child
# whose exit signal is SIGSTOP, and the helper then writes a forged message on the channel.
# Every stop must be refused (EPERM) and the measuring process never stopped; the forged
# message fails the run (exit 1, run-aborted, no report) and is never taken.
source "$SRC/tests/attacks/lib.sh"
command -v "${CC:-cc}" >/dev/null || { echo "skipped: no C compiler (${CC:-cc})"; exit 77; }
${CC:-cc} -O1 -fPIC -shared -I"$SRC/runner/include" -o "$P/attacker.so" \
  "$SRC/tests/attacks/clock-stop-plugin/attacker.c" || { echo "cannot build the plugin"; exit 2; }
MEASUREMENT_EXTRA="  call_timeout_s: 10" protocol "$P/p.yaml" attack_stop_plugin "  - id: attacker
    plugin: attacker.so
    name: attacker"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test (its attacker is no correct arm)
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
check_loot_has "plugin ran"
for what in "kill SIGSTOP" "tgkill SIGSTOP" "rt_sigqueueinfo SIGSTOP" "pidfd_open" "F_SETSIG SIGSTOP" \
  "clone exit signal SIGSTOP"; do
  got=$(grep -h "^$what: " "$LOOT/plugin.txt" 2>/dev/null | head -n 1)
  [ "$got" = "$what: Operation not permitted" ] || escape "the plugin's $what was not refused (${got:-no attempt})"
done
check_loot_lacks "state T" "the measuring process was stopped"
check_loot_has "forged message: ok"
! grep -q "FORGED BY A HELPER" "$WORK/err" || escape "prereg took the helper's message as the measuring process's"
[ "$rc" -eq 1 ] && grep -q "not by the measuring process" "$WORK/err" ||
  escape "the forged message did not fail the run (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
check_last_ledger_event run-aborted
[ -z "$(find "$REPORTS" -mindepth 2)" ] || escape "a report was left: $(find "$REPORTS" -mindepth 2 | head -n 3)"
verdict
