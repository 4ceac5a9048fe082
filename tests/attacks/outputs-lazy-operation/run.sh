#!/usr/bin/env bash
# Family 3 (issue 43), an operation file: its reference returns, in place of its output y, an
# object that computes y only when converted: numpy's __array__ and a torch.Tensor look-alike
# (dtype, detach, cpu, numpy). prereg must refuse it as the reference returns, by its type,
# without calling any of its methods: the dry run at `check` fails (exit 2) naming the type, and
# the run's cells fail with the reference's refusal; nothing is ever converted.
source "$SRC/tests/attacks/lib.sh"
attack_config ""
{
  cat <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

class LazyTensor:
    """y, computed only when numpy or a torch caller converts it."""
    dtype = "torch.float64"
    def __init__(self, t):
        self.t = t
    def _value(self, how):
        escape.loot_line("lazy.txt", "converted by " + how)
        import numpy as np
        sig = 1.0 / (1.0 + np.exp(-self.t.a))
        return self.t.a * sig * self.t.b
    def __array__(self, dtype=None, copy=None):
        return self._value("__array__")
    def detach(self):
        escape.loot_line("lazy.txt", "converted by detach")
        return self
    def cpu(self):
        return self
    def numpy(self):
        return self._value("numpy")
    def is_floating_point(self):
        return True

escape.loot("operation", {"lazy": "planted"})
PY
  sed 's/^    return out$/    return {k: LazyTensor(t) if k == "y" else v for k, v in out.items()}/' \
    "$SRC/examples/operations/swiglu.py"
} >"$P/op.py"
grep -q 'LazyTensor(t) if k == "y"' "$P/op.py" || { echo "cannot plant the lazy reference"; exit 2; }
operation_protocol "$P/p.yaml" attack_lazy_operation
run_prereg check "$P/p.yaml" # the dry run calls the reference once: it refuses the output
[ "$rc" -eq 2 ] && grep -q "not exactly a numpy.ndarray or torch.Tensor" "$WORK/err" ||
  escape "check's dry run took the lazy reference (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg run "$(tail -n 1 "$WORK/out")" --out "$REPORTS" --quiet
[ "$rc" -eq 0 ] || escape "the run failed (exit $rc): $(grep -v '^PREREG-LOOT' "$WORK/err" | head -n 1)"
check_loot_has '"lazy"'
check_not_confirmed P1
why=$(report_get "[c.get('detail', '') for c in r['correctness'] if not c['passed']] + [c['error'] for c in r['cells'] if c['error']]")
[[ $why == *"not exactly a numpy.ndarray or torch.Tensor"* ]] ||
  escape "the run took the lazy reference (its failures: ${why:-none})"
! grep -qs converted "$LOOT/lazy.txt" || escape "prereg converted the lazy reference ($(head -n 1 "$LOOT/lazy.txt"))"
check_run_clean
verdict
