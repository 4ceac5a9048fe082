#!/usr/bin/env bash
# Family 3 (issue 43): a Python arm's step does no work in its window and returns an object
# numpy would convert later (__array__), which computes the right LayerNorm only when converted,
# after the window. The claim that it beats the built-in arm must not be confirmed: its cells fail.
source "$SRC/tests/attacks/lib.sh"
attack_config ""
cat >"$P/arm.py" <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

class Lazy:
    """The output's values, computed when numpy asks for them (after the window)."""
    def __init__(self, t):
        self.t = t
    def __array__(self, dtype=None, copy=None):
        escape.loot_line("lazy.txt", "converted")
        v = escape.layernorm_value(self.t)
        return v if dtype is None else v.astype(dtype)

def attack(t):
    escape.loot("python", {"lazy": "planted"})
    lazy = Lazy(t)
    return lambda: {"y": lazy}
PY
CLAIM="the lazy arm is faster than the built-in one" EXPECT="time(attacker) < time(builtin)" \
  protocol "$P/p.yaml" attack_lazy "  - id: attacker
    python: arm.py
    function: attack"
run_prereg check "$P/p.yaml" # the dry run calls the step once: it refuses the output too
[ "$rc" -eq 2 ] && grep -q "not exactly a numpy.ndarray" "$WORK/err" ||
  escape "check's dry run took the lazy output (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(head -n 1 "$WORK/err")"
check_loot_has '"lazy"'
check_not_confirmed P1
err=$(report_get "[c['error'] for c in r['cells'] if c['arm']=='attacker'][0]")
[[ $err == *"not exactly a numpy.ndarray"* ]] || escape "the lazy output was taken (the attacker's cell error: '${err}')"
! grep -qs converted "$LOOT/lazy.txt" || escape "prereg converted the lazy output (called its __array__)"
check_run_clean
verdict
