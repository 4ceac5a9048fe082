#!/usr/bin/env bash
# Family 7 (issue 43), an operation file: faults while it is imported and in its reference,
# chosen by files the case plants beside it (the file itself stays frozen). Every import fills
# /tmp and /dev/shm with up to 96 MiB (the sandbox's own scratch space, PREREG_SCRATCH_MB=16:
# ENOSPC, nothing left). `stuck`: the reference never returns: `check`'s dry run ends at the
# watchdog (exit 2) and the run fails at it (exit 1, run-aborted), neither hangs. `bidi`: the
# reference fails with bidirectional controls: escaped in `check`'s error and the run's pages.
# `flood`: the import writes 80 MiB without a line end on its loader's channel: `check` fails at
# the channel's bound (exit 1).
source "$SRC/tests/attacks/lib.sh"
unshare -Ur true 2>/dev/null || { echo "skipped: no user namespaces here (no scratch space of the run's own)"; exit 77; }
attack_config ""
export PREREG_SCRATCH_MB=16
marker="prereg-filler-$$-$RANDOM"
{
  cat <<PY
import errno, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape
_HERE = os.path.dirname(os.path.abspath(__file__))

def _fill(folder):
    written, why = 0, "wrote all it tried"
    try:
        with open(os.path.join(folder, "$marker"), "wb") as f:
            while written < (96 << 20):  # a cap, so that without a bound the host's folder survives
                f.write(b"\0" * (1 << 20))
                f.flush()
                written += 1 << 20
    except OSError as e:
        why = errno.errorcode.get(e.errno, str(e.errno))
    return {"folder": folder, "mib": written >> 20, "stopped_by": why}

def _mode(name):
    return os.path.exists(os.path.join(_HERE, name))

escape.loot("operation", {"fill": [_fill("/tmp"), _fill("/dev/shm")]})
if _mode("flood"):
    fd = escape.channel_fd()
    escape.loot("operation", {"flood": fd})
    if fd is not None:
        os.write(fd, b'{"phase": "')
        for _ in range(80):
            os.write(fd, b"x" * (1 << 20))
        os.write(fd, b'"}\n')

def _attack():
    if _mode("stuck"):
        escape.loot("operation", {"stuck": "in the reference"})
        escape.never_return()
    if _mode("bidi"):
        escape.loot("operation", {"bidi": "raised"})
        raise RuntimeError("eager is \u202efaster\u202c than \u2066this\u2069 arm\u061c")
PY
  sed 's/^def reference(t):$/def reference(t):\n    _attack()/' "$SRC/examples/operations/swiglu.py"
} >"$P/op.py"
grep -q '^    _attack()$' "$P/op.py" || { echo "cannot plant the attack in the reference"; exit 2; }
MEASUREMENT_EXTRA="  call_timeout_s: 2" operation_protocol "$P/p.yaml" attack_faults_operation
plant() { rm -f "$P/stuck" "$P/bidi" "$P/flood"; [ -z "$1" ] || touch "$P/$1"; }

plant stuck
PREREG_ATTACK_WATCHDOG=60 run_prereg check "$P/p.yaml"
[ "$rc" -eq 2 ] && grep -q "the watchdog: the operation's reference did not return" "$WORK/err" ||
  escape "check's dry run did not end at the watchdog (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
plant bidi
run_prereg check "$P/p.yaml"
[ "$rc" -eq 2 ] && grep -qF 'u202e' "$WORK/err" ||
  escape "check did not fail on the reference's error, escaped (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
LC_ALL=C grep -v '^PREREG-LOOT ' "$WORK/err" | grep -qP "$bidi_raw" && escape "a bidirectional control reached check's error raw"
plant flood
PREREG_ATTACK_WATCHDOG=60 run_prereg check "$P/p.yaml"
check_loot_has '"flood"'
[ "$rc" -eq 1 ] && grep -q "without a line end" "$WORK/err" ||
  escape "check did not end at the channel's bound (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1 | cut -c1-200)"
plant ""
run_prereg freeze "$P/p.yaml" --no-dry-run
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
hash=$(tail -n 1 "$WORK/out")
plant stuck
PREREG_ATTACK_WATCHDOG=120 run_prereg run "$hash" --out "$REPORTS" --quiet
check_loot_has '"stuck"'
[ "$rc" -eq 1 ] && grep -q "the watchdog" "$WORK/err" ||
  escape "the run with a stuck reference did not end at the watchdog (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
check_last_ledger_event run-aborted
plant bidi
run_prereg run "$hash" --out "$REPORTS"
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
check_loot_has '"bidi"'
check_not_confirmed P1
check_bidi_escaped
plant ""
for f in /tmp/$marker /dev/shm/$marker; do
  [ ! -e "$f" ] || { escape "the filler is left in ${f%/*}"; rm -f "$f"; }
done
check_loot_lacks '"stopped_by": "wrote all it tried"' "the filler was not bounded: $(grep -h 'wrote all' "$LOOT/operation.json" | head -n 1)"
check_loot_has '"stopped_by": "ENOSPC"'
check_run_clean
verdict
