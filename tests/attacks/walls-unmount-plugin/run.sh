#!/usr/bin/env bash
# Family 1 (issue 43): a C plugin unmounts the masks over the key file and its folder and reads
# the key (attacker.c).
source "$SRC/tests/attacks/lib.sh"
command -v "${CC:-cc}" >/dev/null || { echo "skipped: no C compiler (${CC:-cc})"; exit 77; }
plant_key
printf '%s\n%s\n' "$KEY" "$LOOT" >"$P/attack.conf"
${CC:-cc} -O1 -fPIC -shared -I"$SRC/runner/include" -DATTACK_CONF="\"$P/attack.conf\"" \
  -o "$P/attacker.so" "$SRC/tests/attacks/walls-unmount-plugin/attacker.c" \
  || { echo "cannot build the plugin"; exit 2; }
protocol "$P/p.yaml" attack_unmount_plugin "  - id: attacker
    plugin: attacker.so
    name: attacker"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test (its attacker is no correct arm)
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(head -n 1 "$WORK/err")"
check_no_key
check_loot_has "plugin ran"
check_run_clean
verdict
