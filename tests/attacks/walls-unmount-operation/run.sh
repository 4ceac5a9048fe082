#!/usr/bin/env bash
# Family 1 (issue 43): an operation file unmounts the masks over the key file and its folder
# and reads the key while it is imported at `check` and `freeze` (where it is read before
# anything is stored). (The measuring process that imports it again at `run` stands in the same
# sandbox as the arms of walls-unmount-python.)
source "$SRC/tests/attacks/lib.sh"
plant_key
attack_config "$KEY"
{
  cat <<'PY'
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape
escape.loot("operation", {"pid": os.getpid(), "hunt": escape.key_hunt(escape.config()["key"])})
PY
  cat "$SRC/examples/operations/swiglu.py"
} >"$P/op.py"
operation_protocol "$P/p.yaml" attack_unmount_operation
run_prereg check "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "check failed (exit $rc): $(head -n 1 "$WORK/err")"
run_prereg freeze "$P/p.yaml"
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
check_no_key
check_loot_has '"hunt"'
verdict
