# End-to-end: arms from outside prereg (docs/plugins.md, docs/python-arms.md) on the CPU.
# The example C plugin is built with its own Makefile against the ABI header only, listed,
# frozen, run and audited; a changed library or Python file after freeze is exit 3; broken
# libraries (no table, another ABI version, a crash in setup) are exit 2 with one line; a failing
# setup is an arm-error and the report is still signed; numpy arms through the embedded Python:
# a correct one passes, a raising one is an arm-error carrying the exception's last line, a
# wrong one is excluded by the correctness gate; no usable Python is exit 5.
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
export PREREG_PYTHON=$py
cc=${CC:-cc}
inc=$PREREG_SOURCE_DIR/runner/include
data=$PREREG_SOURCE_DIR/tests/data/outside
out=$work/reports
report_of() { tail -n 1 "$work/out"; }
json_get() { "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1/report.json" "$2"; }

# --- the example plugin, built out of tree ---------------------------------------------------
cp -r "$PREREG_SOURCE_DIR/examples/plugins/cpu_layernorm" "$work/example"
expect_exit 0 "example plugin builds with its Makefile" -- make -C "$work/example" PREREG_INCLUDE="$inc"
expect_exit 0 "arms --plugin lists the library" -- "$PREREG" arms --plugin "$work/example/libcpu_layernorm.so"
grep -q "cpu_layernorm  *layernorm  *cpu" "$work/out" && pass "the listing names the arm" || fail "arms --plugin output: $(cat "$work/out")"
expect_exit 0 "check validates the plugin arm" -- "$PREREG" check "$work/example/protocol.yaml"
expect_exit 0 "freeze the example protocol" -- "$PREREG" freeze "$work/example/protocol.yaml"
hash=$(tail -n 1 "$work/out")
expect_exit 0 "run the example protocol" -- "$PREREG" run "$hash" --out "$out" --quiet
dir=$(report_of)
expect_exit 0 "its report audits clean" -- "$PREREG" audit "$dir"
[ "$(json_get "$dir" "r['environment']['outside_arms']['mine']['sha256'][:12]")" = "$(sha256sum "$work/example/libcpu_layernorm.so" | cut -c1-12)" ] \
  && pass "the report records the library's sha256" || fail "outside_arms sha256 missing"
[ "$(json_get "$dir" "all(c['passed'] for c in r['correctness'])")" = True ] \
  && pass "the plugin passes the correctness gate" || fail "plugin correctness: $(json_get "$dir" "r['correctness']")"
[ "$(json_get "$dir" "max(c['peak_bytes'] for c in r['cells'] if c['arm']=='mine' and c['pass']=='fwd+bwd')")" -gt 0 ] \
  && pass "the plugin's allocator memory is billed to it" || fail "plugin peak bytes not billed"
printf '\0' >>"$work/example/libcpu_layernorm.so"
expect_exit 3 "a changed library after freeze is refused" -- "$PREREG" run "$hash" --out "$out" --quiet
expect_err "plugin file of arm mine changed since freezing" "the refusal names the arm and the library"

# --- broken libraries ------------------------------------------------------------------------
build_broken() { # NAME DEFINE
  "$cc" -O1 -fPIC -shared -I"$inc" "-D$2" -o "$work/$1.so" "$data/broken_plugins.c" 2>"$work/cc.err" \
    || { fail "cannot build $1: $(head -2 "$work/cc.err")"; return 1; }
}
plugin_protocol() { # NAME -> $work/NAME.yaml naming $work/NAME.so
  sed "s#PLUGIN_PATH#$1.so#; s#id: e2e_plugin#id: e2e_plugin_$1#" "$data/protocol_plugin.yaml" >"$work/$1.yaml"
}
build_broken no_table NO_TABLE && plugin_protocol no_table
expect_exit 2 "a library without prereg_arms() is refused" -- "$PREREG" check "$work/no_table.yaml"
expect_err "exports no prereg_arms" "the refusal says what is missing"
build_broken wrong_abi WRONG_ABI && plugin_protocol wrong_abi
expect_exit 2 "a library of another ABI version is refused" -- "$PREREG" arms --plugin "$work/wrong_abi.so"
expect_err "ABI version 42, this prereg speaks 1" "the refusal names both versions"
build_broken crash CRASH_SETUP && plugin_protocol crash
expect_exit 2 "freeze's dry run calls the setup that crashes: refused" -- "$PREREG" freeze "$work/crash.yaml"
expect_err "^prereg: error: arm plug \(plugin .*/crash.so:broken\) crashed in its setup" "  ... in the crash's one line"
# The run's own handling of these failures: frozen without the dry run (docs/engine.md).
expect_exit 0 "freeze --no-dry-run loads the library without calling it" -- "$PREREG" freeze --no-dry-run "$work/crash.yaml"
expect_exit 2 "a crash in setup is exit 2, not a crash of prereg" -- "$PREREG" run "$(tail -n 1 "$work/out")" --out "$out" --quiet
expect_err "^prereg: error: arm plug \(plugin .*/crash.so:broken\) crashed in its setup" "one line names the arm and the phase"
[ "$(grep -c . "$work/err")" -eq 1 ] && pass "exactly one line on stderr" || fail "stderr: $(cat "$work/err")"
build_broken fails FAIL_SETUP && plugin_protocol fails
"$PREREG" freeze --no-dry-run "$work/fails.yaml" >"$work/out" 2>&1
expect_exit 0 "a failing setup does not stop the run" -- "$PREREG" run "$(tail -n 1 "$work/out")" --out "$out" --quiet
dir=$(report_of)
expect_exit 0 "that report is signed and audits clean" -- "$PREREG" audit "$dir"
json_get "$dir" "[d['message'] for d in r['deviations'] if d['kind']=='arm-error']" | grep -q "planted setup failure for 16 rows" \
  && pass "the arm-error carries the library's reason" || fail "deviations: $(json_get "$dir" "r['deviations']")"
build_broken wrong WRONG_RESULT && plugin_protocol wrong
"$PREREG" freeze --no-dry-run "$work/wrong.yaml" >"$work/out" 2>&1
expect_exit 0 "run a wrong plugin arm" -- "$PREREG" run "$(tail -n 1 "$work/out")" --out "$out" --quiet
dir=$(report_of)
[ "$(json_get "$dir" "[d['kind'] for d in r['deviations']]")" = "['arm-excluded']" ] \
  && pass "the correctness gate excludes the wrong plugin arm" || fail "deviations: $(json_get "$dir" "r['deviations']")"

# --- Python arms (numpy) ---------------------------------------------------------------------
if ! "$py" -c 'import numpy' 2>/dev/null; then fail "$py has no numpy (install python3-numpy)"; finish; fi
mkdir -p "$work/py" && cp "$data/numpy_arms.py" "$data/protocol_numpy.yaml" "$work/py/"
expect_exit 2 "the numpy protocol's raising arm fails the dry run" -- "$PREREG" freeze "$work/py/protocol_numpy.yaml"
expect_err "^prereg: error: dry run: arm np_raises " "  ... naming the arm"
expect_exit 0 "freeze the numpy protocol without the dry run" -- "$PREREG" freeze --no-dry-run "$work/py/protocol_numpy.yaml"
hash=$(tail -n 1 "$work/out")
expect_exit 0 "run the numpy protocol" -- "$PREREG" run "$hash" --out "$out" --quiet
dir=$(report_of)
expect_exit 0 "its report audits clean" -- "$PREREG" audit "$dir"
[ "$(json_get "$dir" "sorted((c['arm'], c['passed']) for c in r['correctness'] if c['rows']==16)")" \
  = "[('builtin', True), ('np_ok', True), ('np_raises', False), ('np_wrong', False)]" ] \
  && pass "correct numpy arm passes; raising and wrong ones fail the gate" \
  || fail "correctness: $(json_get "$dir" "r['correctness']")"
json_get "$dir" "[d['message'] for d in r['deviations'] if d['kind']=='arm-error']" | grep -q "RuntimeError: planted failure inside the step" \
  && pass "a raising arm is an arm-error with the exception's last line" || fail "deviations: $(json_get "$dir" "r['deviations']")"
json_get "$dir" "[c['cell']['arm'] for c in r['deviations'] if c['kind']=='arm-excluded']" | grep -q np_wrong \
  && pass "the wrong numpy arm is excluded" || fail "np_wrong not excluded"
[ "$(json_get "$dir" "r['environment']['python']['packages']['numpy'] is not None")" = True ] \
  && pass "the report records the numpy version" || fail "environment.python: $(json_get "$dir" "r['environment'].get('python')")"
[ "$(json_get "$dir" "r['environment']['outside_arms']['np_ok']['sha256'][:12]")" = "$(sha256sum "$work/py/numpy_arms.py" | cut -c1-12)" ] \
  && pass "the report records the Python file's sha256" || fail "python file hash missing"
expect_exit 5 "no usable Python is exit 5" -- env PREREG_PYTHON="$work/no-such-python" "$PREREG" run "$hash" --out "$out" --quiet
expect_err "no usable Python for Python arms" "the refusal says how to fix it"
echo "# an edit after freezing" >>"$work/py/numpy_arms.py"
expect_exit 3 "a changed Python file after freeze is refused" -- "$PREREG" run "$hash" --out "$out" --quiet
expect_err "python file of arms? .*np_ok.* changed since freezing" "the refusal names the arm and the file"

# --- the guards against planted numpy cheating arms (tests/data/python/cheating_arms.py) --------
mkdir -p "$work/cheats/outside" "$work/cheats/python"
cp "$data/protocol_cheats.yaml" "$work/cheats/outside/"
cp "$PREREG_SOURCE_DIR/tests/data/python/cheating_arms.py" "$work/cheats/python/"
expect_exit 0 "freeze the cheating-arms protocol" -- "$PREREG" freeze --no-dry-run "$work/cheats/outside/protocol_cheats.yaml"
hash=$(tail -n 1 "$work/out")
expect_exit 0 "run it" -- "$PREREG" run "$hash" --out "$out" --quiet
dir=$(report_of)
expect_exit 0 "its report audits clean" -- "$PREREG" audit "$dir"
corr() { json_get "$dir" "[(c['passed'], c['detail']) for c in r['correctness'] if c['arm']=='$1'][0]"; }
corr honest | grep -q "^(True" && pass "the honest arm passes every check" || fail "honest: $(corr honest)"
corr cached | grep -q "^(False, 'timed sample [0-9]*: y: " \
  && pass "the caching arm passes the gate but a spot-checked timed output is stale" || fail "cached: $(corr cached)"
corr zeros | grep -q "^(False, .y: " \
  && pass "the all-zero arm fails the gate (a constant output under a loose atol: measure_test)" || fail "zeros: $(corr zeros)"
json_get "$dir" "[d['cell']['arm'] for d in r['defects'] if d['code']=='input-mutated']" | grep -q "mutating" \
  && pass "the mutating arm is an input-mutated defect" || fail "defects: $(json_get "$dir" "[d['code'] for d in r['defects']]")"
[ "$(json_get "$dir" "sorted(d['cell']['arm'] for d in r['deviations'] if d['kind']=='arm-excluded')")" = "['cached', 'zeros']" ] \
  && pass "the caching and the all-zero arms are excluded from the verdicts" || fail "deviations: $(json_get "$dir" "r['deviations']")"
finish
