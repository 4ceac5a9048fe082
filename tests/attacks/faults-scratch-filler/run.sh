#!/usr/bin/env bash
# Family 7 (issue 43): a Python arm fills the scratch folders (/tmp, /dev/shm) with up to 96 MiB.
# The measuring process's scratch space is its own, bounded (PREREG_SCRATCH_MB=16 here) and gone
# with it: the filler meets ENOSPC, the run completes and loses nothing, and nothing of the
# filler is left for later commands (a second run of the same protocol completes too).
source "$SRC/tests/attacks/lib.sh"
attack_config ""
export PREREG_SCRATCH_MB=16
unshare -Ur true 2>/dev/null || { echo "skipped: no user namespaces here (no scratch space of the run's own)"; exit 77; }
marker="prereg-filler-$$-$RANDOM"
cat >"$P/arm.py" <<PY
import errno, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def _fill(folder):
    path = os.path.join(folder, "$marker")
    written, why = 0, "wrote all it tried"
    try:
        with open(path, "wb") as f:
            block = b"\0" * (1 << 20)
            while written < (96 << 20):  # a cap, so that without a bound the host's /tmp survives
                f.write(block)
                f.flush()
                written += len(block)
    except OSError as e:
        why = errno.errorcode.get(e.errno, str(e.errno))
    return {"folder": folder, "mib": written >> 20, "stopped_by": why}

def attack(t):
    escape.loot("python", {"fill": [_fill("/tmp"), _fill("/dev/shm")]})
    return escape.layernorm_step(t)
PY
protocol "$P/p.yaml" attack_filler "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test (the dry run would call the arm too)
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
hash=$(tail -n 1 "$WORK/out")
run_prereg run "$hash" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(head -n 1 "$WORK/err")"
check_loot_has '"fill"'
for f in /tmp/$marker /dev/shm/$marker; do
  [ ! -e "$f" ] || { escape "the filler is left in ${f%/*} after the run"; rm -f "$f"; }
done
grep -qs '"stopped_by": "ENOSPC"' "$LOOT/python.json" ||
  escape "the filler was not bounded: $(tail -n 1 "$LOOT/python.json")"
[ "$(report_get "r['run']['scratch']['bytes']")" = $((16 << 20)) ] ||
  escape "the report does not record the scratch space: $(report_get "r['run'].get('scratch')")"
check_run_clean
run_prereg run "$hash" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "a second run after the filler failed (exit $rc): $(head -n 1 "$WORK/err")"
verdict
