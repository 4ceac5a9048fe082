#!/usr/bin/env bash
# Family 7 (issue 43): a Python arm fills the scratch folders (/tmp, /dev/shm) with up to 96 MiB.
# The measuring process's scratch space is its own, bounded (PREREG_SCRATCH_MB=16 here) and gone
# with it: the filler meets ENOSPC, the run completes and loses nothing, and nothing of the
# filler is left for later commands (a second run of the same protocol completes too). As root, a
# third run adds a scratch folder the scratch space cannot cover (XDG_CACHE_HOME with a mount
# below it: the kernel refuses an overlay there, as it does over /tmp whenever anything is mounted
# below /tmp): that folder must be read-only in the sandbox (EROFS), never the real folder.
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
    folders = ["/tmp", "/dev/shm"] + ([os.environ["XDG_CACHE_HOME"]] if "XDG_CACHE_HOME" in os.environ else [])
    escape.loot("python", {"fill": [_fill(f) for f in folders]})
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
# left_behind WHEN: the filler's files in the real folders (removed, an escape).
left_behind() {
  local f
  for f in /tmp/$marker /dev/shm/$marker ${XDG_CACHE_HOME:+$XDG_CACHE_HOME/$marker}; do
    [ ! -e "$f" ] || { escape "the filler is left in ${f%/*} $1 (run.scratch: $(report_get "r['run'].get('scratch')"))"; rm -f "$f"; }
  done
}
left_behind "after the run"
# Each folder meets the bound (ENOSPC), or is read-only where the scratch space could not cover
# it (EROFS, the report's run.scratch.reason naming it); never all it tried.
! grep -qs '"stopped_by": "wrote all it tried"' "$LOOT/python.json" ||
  escape "the filler was not bounded: $(tail -n 1 "$LOOT/python.json") (run.scratch: $(report_get "r['run'].get('scratch')"))"
grep -qs '"stopped_by": "ENOSPC"' "$LOOT/python.json" ||
  escape "the filler never met the scratch space's bound: $(tail -n 1 "$LOOT/python.json")"
[ "$(report_get "r['run']['scratch']['bytes']")" = $((16 << 20)) ] ||
  escape "the report does not record the scratch space: $(report_get "r['run'].get('scratch')")"
check_run_clean
run_prereg run "$hash" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "a second run after the filler failed (exit $rc): $(head -n 1 "$WORK/err")"
left_behind "after a second run"
if [ "$(id -u)" -eq 0 ] && side=$(mktemp -d /run/prereg-filler.XXXXXX 2>/dev/null); then
  mkdir -p "$side/cache/below"
  trap 'umount "$side/cache/below" 2>/dev/null; rm -rf "$side"' EXIT
  if mount -t tmpfs -o size=64k prereg-case "$side/cache/below" 2>/dev/null; then
    rm -f "$LOOT/python.json"
    XDG_CACHE_HOME=$side/cache run_prereg run "$hash" --out "$REPORTS" --quiet
    [ "$rc" -eq 0 ] || escape "a run with an uncovered scratch folder failed (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
    XDG_CACHE_HOME=$side/cache left_behind "after a run where it could not be covered"
    grep -qs "\"folder\": \"$side/cache\", \"mib\": 0, \"stopped_by\": \"EROFS\"" "$LOOT/python.json" ||
      escape "a scratch folder the scratch space could not cover was writable: $(tail -n 1 "$LOOT/python.json")"
    [[ $(report_get "r['run']['scratch']['reason']") == *"read-only in the sandbox instead: $side/cache"* ]] ||
      escape "the report does not say the uncovered folder was read-only: $(report_get "r['run'].get('scratch')")"
    umount "$side/cache/below"
  fi
  rm -rf "$side"
fi
verdict
