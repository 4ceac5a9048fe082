# End-to-end: the dry run of `check` and `freeze` (docs/engine.md, "The dry run"; issue 46). Each
# planted mistake of tests/data/dry_run/mistakes.py (an arm with a closure bug, an arm that reads
# t.out, an arm that computes the wrong values, a reference that returns `out` instead of `y`, a
# reference of the wrong shape) and a C plugin that writes wrong values are refused at check and
# at freeze with exit 2 and their one line, and leave the store (ledger included) byte for byte
# as it was. A correct protocol passes with the dry run's line; a built-in protocol's arms are
# called too; --no-dry-run skips it.
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
export PREREG_PYTHON=$py
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: $py has no numpy"; exit 77; }
cp "$PREREG_SOURCE_DIR/tests/data/dry_run/"* "$work/"
dir=$work
# A store with one frozen protocol and a run-free ledger, so that "nothing changed" means bytes.
sed -e 's/OPERATION/l2norm/' -e 's/ARM/correct/' -e 's/dry_ID/dry_good/' "$work/protocol.yaml" >"$work/good.yaml"
expect_exit 0 "check of a correct protocol passes" -- "$PREREG" check "$work/good.yaml"
grep -qxF "  dry run on cpu: each arm called once, every output matches operation l2norm's reference (rtol 1e-05, atol 1e-05) at fwd 4x8 (good, mine)" "$work/out" \
  && pass "  ... with the dry run's line: the smallest shape (4x8 of 16x8, 4x8), both arms" || fail "check output: $(cat "$work/out")"
expect_exit 0 "freeze it" -- "$PREREG" freeze "$work/good.yaml"
grep -q "^dry run on cpu: each arm called once" "$work/out" && pass "  ... freeze prints the dry run's line too" || fail "freeze output: $(cat "$work/out")"
store_bytes() { (cd "$PREREG_STORE" && find . -type f ! -name lock -print0 | sort -z | xargs -0 sha256sum); }
before=$(store_bytes)

# planted NAME OPERATION ARM LINE: refused at check and freeze with exit 2 and exactly LINE.
planted() {
  sed -e "s/OPERATION/$2/" -e "s/ARM/$3/" -e "s/dry_ID/dry_$1/" "$work/protocol.yaml" >"$work/$1.yaml"
  for cmd in check freeze; do
    expect_exit 2 "$1: refused at $cmd" -- "$PREREG" "$cmd" "$work/$1.yaml"
    if [ "$(cat "$work/err")" = "$4" ]; then pass "  ... with its one line"; else
      fail "  ... stderr is not the line"; printf '    got:  %s\n    want: %s\n' "$(cat "$work/err")" "$4"; fi
  done
}
planted closure l2norm closure_bug \
  "prereg: error: dry run: arm mine (python mistakes.py:closure_bug) at fwd 4x8: the arm failed in its correctness run: UnboundLocalError: cannot access local variable 'norms' where it is not associated with a value (line 49 of mistakes.py) ($dir/mistakes.py)"
planted wrong_name l2norm wrong_name \
  "prereg: error: dry run: arm mine (python mistakes.py:wrong_name) at fwd 4x8: the arm failed in its correctness run: AttributeError: t has no tensor or field 'out' (the operation's tensors: x, y) (line 57 of mistakes.py) ($dir/mistakes.py)"
planted reference_key l2norm_out correct \
  "prereg: error: dry run: operation l2norm_out: the reference at fwd 4x8 returned no y (it returned out) (the operation's reference failed, not an arm: fix the operation's reference) ($dir/mistakes.py)"
planted reference_shape l2norm_norms correct \
  "prereg: error: dry run: operation l2norm_norms: the reference at fwd 4x8 returned y of shape (4, 1), not (4, 8) (the operation's reference failed, not an arm: fix the operation's reference) ($dir/mistakes.py)"
sed -e 's/OPERATION/l2norm/' -e 's/ARM/forgot_sqrt/' -e 's/dry_ID/dry_values/' "$work/protocol.yaml" >"$work/values.yaml"
expect_exit 2 "wrong values: refused at freeze" -- "$PREREG" freeze "$work/values.yaml"
expect_err "^prereg: error: dry run: arm mine \(python mistakes.py:forgot_sqrt\) at fwd 4x8: y: element 0 \(row 0, col 0\) is -?[0-9.e+-]+, reference -?[0-9.e+-]+ \(rtol 1e-05, atol 1e-05\) \($dir/mistakes.py\)$" \
  "  ... naming the tensor, the element and both values"
[ "$(grep -c . "$work/err")" -eq 1 ] && pass "  ... in one line" || fail "  ... stderr: $(cat "$work/err")"

# A C plugin of the built-in layernorm that writes wrong values (tests/data/outside).
if ${CC:-cc} -O1 -fPIC -shared -I"$PREREG_SOURCE_DIR/runner/include" -DWRONG_RESULT -o "$work/wrong.so" \
  "$PREREG_SOURCE_DIR/tests/data/outside/broken_plugins.c" 2>"$work/cc.err"; then
  sed "s#PLUGIN_PATH#wrong.so#; s#id: e2e_plugin#id: e2e_plugin_wrong#" \
    "$PREREG_SOURCE_DIR/tests/data/outside/protocol_plugin.yaml" >"$work/plugin.yaml"
  expect_exit 2 "a plugin that writes wrong values: refused at freeze" -- "$PREREG" freeze "$work/plugin.yaml"
  expect_err "^prereg: error: dry run: arm plug \(plugin wrong.so:broken\) at fwd [0-9]+x[0-9]+: " "  ... naming the plugin arm"
else
  fail "cannot build the plugin: $(head -3 "$work/cc.err")"
fi
[ "$(store_bytes)" = "$before" ] && pass "nothing refused changed the store or the ledger (byte for byte)" \
  || fail "the store changed: $(diff <(echo "$before") <(store_bytes) | head -5)"

# --no-dry-run: the arms are loaded, not called (for a protocol meant to fail at run time).
expect_exit 0 "check --no-dry-run skips it" -- "$PREREG" check --no-dry-run "$work/closure.yaml"
grep -q "dry run" "$work/out" && fail "  ... but printed a dry run line" || pass "  ... and prints no dry run line"

# A built-in protocol: its arms are called too (the CPU smoke protocol, made small).
sed -e 's/^id: cpu_smoke/id: dry_smoke/' "$PREREG_SOURCE_DIR/protocols/cpu_smoke.yaml" >"$work/smoke.yaml"
expect_exit 0 "check of the CPU smoke protocol (built-in arms)" -- "$PREREG" check "$work/smoke.yaml"
grep -qE "^  dry run on cpu: each arm called once, every output matches operation layernorm's reference \(rtol [0-9e.+-]+, atol [0-9e.+-]+\) at fwd [0-9]+x[0-9]+ \(" "$work/out" \
  && pass "  ... its built-in arms dry-run" || fail "check output: $(cat "$work/out")"
finish
