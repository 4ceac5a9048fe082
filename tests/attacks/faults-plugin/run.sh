#!/usr/bin/env bash
# Family 7 (issue 43), a C plugin: faults (attacker.c), one arm each. In one run: `stuck` never
# returns from its step (the watchdog, measurement.call_timeout_s: 2, leaves it out and the run
# completes in a spare), `filler` writes up to 96 MiB into /tmp and /dev/shm (the run's own
# scratch space, PREREG_SCRATCH_MB=16: ENOSPC, nothing left), `bidi` fails with bidirectional
# controls in its message (escaped in the pages and prereg's output). `check` first: its dry run
# meets the stuck step and must end at the watchdog (exit 2), not hang. Then a second protocol:
# `flood` writes 80 MiB without a line end on the channel (exit 1 at the channel's bound,
# run-aborted, no report).
source "$SRC/tests/attacks/lib.sh"
command -v "${CC:-cc}" >/dev/null || { echo "skipped: no C compiler (${CC:-cc})"; exit 77; }
unshare -Ur true 2>/dev/null || { echo "skipped: no user namespaces here (no scratch space of the run's own)"; exit 77; }
export PREREG_SCRATCH_MB=16
marker="prereg-filler-$$-$RANDOM"
${CC:-cc} -O1 -fPIC -shared -I"$SRC/runner/include" -DMARKER="\"$marker\"" -o "$P/attacker.so" \
  "$SRC/tests/attacks/faults-plugin/attacker.c" || { echo "cannot build the plugin"; exit 2; }
arm() { printf '  - id: %s\n    plugin: attacker.so\n    name: %s\n' "$1" "$1"; }
MEASUREMENT_EXTRA="  call_timeout_s: 2" protocol "$P/p.yaml" attack_faults_plugin "$(arm stuck)
$(arm filler)
$(arm bidi)"
PREREG_ATTACK_WATCHDOG=60 run_prereg check "$P/p.yaml"
[ "$rc" -eq 2 ] && grep -q "the watchdog: a correctness run of arm stuck did not return" "$WORK/err" ||
  escape "check's dry run did not end at the watchdog (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
PREREG_ATTACK_WATCHDOG=120 run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS"
[ "$rc" -eq 0 ] || escape "the run did not complete (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
check_loot_has "stuck: in its step"
check_loot_has "bidi: raised"
[ "$(report_get "[s['arm'] for s in r['run']['watchdog']['stuck']]")" = "['stuck']" ] ||
  escape "the report's watchdog does not name the stuck arm: $(report_get "r['run'].get('watchdog')")"
check_judged
for f in /tmp/$marker /dev/shm/$marker; do
  [ ! -e "$f" ] || { escape "the filler is left in ${f%/*} after the run"; rm -f "$f"; }
done
for folder in /tmp /dev/shm; do
  got=$(grep -h "^fill $folder: " "$LOOT/plugin.txt" 2>/dev/null | tail -n 1)
  [[ $got == *"stopped by No space left on device"* ]] || escape "the filler was not bounded in $folder: ${got:-no attempt}"
done
check_bidi_escaped
check_run_clean
protocol "$P/flood.yaml" attack_flood_plugin "$(arm flood)"
run_prereg freeze "$P/flood.yaml" --no-dry-run
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
PREREG_ATTACK_WATCHDOG=120 run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
check_loot_has "flood: on fd"
[ "$rc" -eq 1 ] && grep -q "without a line end" "$WORK/err" ||
  escape "the flood did not fail the run at the channel's bound (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1 | cut -c1-200)"
check_last_ledger_event run-aborted
[ -z "$(find "$REPORTS/attack_flood_plugin" -mindepth 1 2>/dev/null)" ] || escape "the flooded run left a report"
run_prereg ledger verify
[ "$rc" -eq 0 ] || escape "the ledger no longer verifies: $(head -n 1 "$WORK/err")"
verdict
