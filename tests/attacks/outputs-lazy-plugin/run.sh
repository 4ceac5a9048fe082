#!/usr/bin/env bash
# Family 3 (issue 43), a C plugin: its step returns at once and a thread it left running writes
# the outputs 200 ms later (attacker.c); only the correctness gate's call computes them in its
# window. The claim that it beats the built-in arm must not be confirmed: the spot checks of its
# timed samples find the outputs unwritten as the window closes, and its cells fail.
source "$SRC/tests/attacks/lib.sh"
command -v "${CC:-cc}" >/dev/null || { echo "skipped: no C compiler (${CC:-cc})"; exit 77; }
${CC:-cc} -O1 -fPIC -shared -pthread -I"$SRC/runner/include" -o "$P/attacker.so" \
  "$SRC/tests/attacks/outputs-lazy-plugin/attacker.c" -lm || { echo "cannot build the plugin"; exit 2; }
CLAIM="the lazy plugin is faster than the built-in arm" \
  EXPECT="time(attacker) < time(builtin)" protocol "$P/p.yaml" attack_lazy_plugin "  - id: attacker
    plugin: attacker.so
    name: attacker"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test (the dry run is the gate's call alone)
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
check_loot_has "lazy plugin planted"
check_not_confirmed P1
detail=$(report_get "[c.get('detail', '') for c in r['correctness'] if c['arm']=='attacker' and not c['passed']]")
[[ $detail == *"timed sample"* ]] ||
  escape "the late outputs were taken (the attacker's failed correctness records: ${detail:-none})"
check_run_clean
verdict
