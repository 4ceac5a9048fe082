#!/usr/bin/env bash
# A new user's first Python arm (issue 37): examples/python/numpy copied to a folder of its own
# (temporary store, key and HOME), each trap of that path planted in turn and its exit code,
# message and ledger checked: a function typo and a missing file refused at check and freeze
# with nothing stored; an interpreter without numpy a notice at check, frozen anyway, and at run
# exit 5 naming the interpreter with no attempt recorded; a second version under one id; the
# bad `expect` forms; then the corrected session (check, freeze, run, audit PASS), an arm file
# edited after its run (check's notice), and compare across the two revisions naming the arm
# whose code differs.
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: $py has no numpy (python3-numpy)"; exit 77; }
export HOME="$work/home"
export PREREG_PYTHON=$py
mkdir -p "$HOME"
proj="$work/first"
cp -r "$PREREG_SOURCE_DIR/examples/python/numpy" "$proj"
cd "$proj" || exit 1
pristine="$work/pristine.yaml"
cp protocol.yaml "$pristine"
reports="$work/reports"

# expect_line PATTERN DESCRIPTION: the last command's stdout matches PATTERN (grep -E).
expect_line() {
  if grep -qE -- "$1" "$work/out"; then pass "$2"; else
    fail "$2: stdout lacks /$1/"; sed 's/^/    /' "$work/out" | head -5; fi
}
# expect_no_err PATTERN DESCRIPTION: the last command's stderr does not match PATTERN.
expect_no_err() {
  if grep -qE -- "$1" "$work/err"; then fail "$2: stderr has /$1/"; sed 's/^/    /' "$work/err" | head -5
  else pass "$2"; fi
}
nothing_stored() {
  if [ ! -e "$PREREG_STORE/ledger.jsonl" ] && [ -z "$(ls -A "$PREREG_STORE/protocols" 2>/dev/null)" ]
  then pass "$1: nothing is stored"; else fail "$1: the store holds $(ls -R "$PREREG_STORE" | head -5)"; fi
}
# events HASH: the ledger's events of that protocol hash, space-separated.
events() {
  "$py" -c 'import json, sys
print(" ".join(e["event"] for e in map(json.loads, open(sys.argv[1])) if e.get("protocol_hash") == sys.argv[2]))' \
    "$PREREG_STORE/ledger.jsonl" "$1"
}
with_protocol() { cp "$pristine" protocol.yaml; sed -i "$1" protocol.yaml; }

# --- trap 1: a typo in `function:` ----------------------------------------------------------
with_protocol 's/^    function: layernorm$/    function: layernorm_np/'
expect_exit 2 "check refuses a function the file does not define" -- "$PREREG" check protocol.yaml
expect_err "^prereg: error: arm numpy: layernorm_numpy.py has no function layernorm_np \(it defines layernorm; did you mean 'layernorm'\?\) \(.*/layernorm_numpy.py\)$" \
  "the refusal names the file and function, the functions it defines and the nearest"
[ "$(wc -l <"$work/err")" -eq 1 ] && pass "one line" || fail "stderr has $(wc -l <"$work/err") lines"
expect_exit 2 "freeze refuses it too" -- "$PREREG" freeze protocol.yaml
expect_err "has no function layernorm_np" "freeze says why"
nothing_stored "a refused freeze"

# --- trap 2: a misspelt file ------------------------------------------------------------------
with_protocol 's/^    python: layernorm_numpy.py$/    python: layernorm_nunpy.py/'
expect_exit 2 "check refuses a Python file that does not exist" -- "$PREREG" check protocol.yaml
expect_err "^prereg: error: arm numpy: its file layernorm_nunpy.py does not exist \(.*/layernorm_nunpy.py\)$" \
  "it says the file does not exist"
expect_exit 2 "freeze refuses it too" -- "$PREREG" freeze protocol.yaml
expect_err "layernorm_nunpy.py does not exist" "freeze says why"
nothing_stored "a refused freeze"

# --- trap 3: a file that does not import for a reason of its own code ------------------------
cp layernorm_numpy.py "$work/arm.orig"
printf 'import numpy as np\nundefined_name + 1\n' >>layernorm_numpy.py
cp "$pristine" protocol.yaml
expect_exit 2 "check refuses a file whose own code raises on import" -- "$PREREG" check protocol.yaml
expect_err "^prereg: error: arm numpy: cannot load layernorm from the Python file: NameError: name 'undefined_name' is not defined \(line [0-9]+\)" \
  "the refusal gives the exception's type, first line and the file's line"
cp "$work/arm.orig" layernorm_numpy.py
nothing_stored "a refused check"

# --- trap 4: the kernel's name, or a misspelt arm, in `expect` -------------------------------
with_protocol 's/expect: "fused < numpy"/expect: "layernorm.fused < numpy"/'
expect_exit 2 "a kernel name in expect is refused" -- "$PREREG" check protocol.yaml
expect_err "expect: 'layernorm.fused' is not an arm id: expect takes arm ids \(arms: fused, numpy; did you mean 'fused', the arm that runs layernorm.fused\?\) at offset 0" \
  "it says expect takes arm ids, lists them and names the arm that runs that kernel"
with_protocol 's/expect: "fused < numpy"/expect: "time(fussed) < time(numpy)"/'
expect_exit 2 "a misspelt arm in time() is refused" -- "$PREREG" check protocol.yaml
expect_err "time\(\) takes an arm id, got 'fussed' \(arms: fused, numpy; did you mean 'fused'\?\) at offset 5" \
  "time() lists the arm ids with a did-you-mean"
with_protocol 's/expect: "fused < numpy"/expect: "fused < layernorm"/'
expect_exit 2 "the Python function's name in expect is refused" -- "$PREREG" check protocol.yaml
expect_err "unknown identifier 'layernorm' \(arms: fused, numpy; did you mean 'numpy', the arm that runs layernorm\?\)" \
  "it names the arm that runs that function"
nothing_stored "refused checks"

# --- trap 5: an interpreter that cannot import numpy -----------------------------------------
cp "$pristine" protocol.yaml
nonumpy="$work/python-without-numpy"
printf '#!/bin/sh\n# the same interpreter without site-packages: numpy cannot be imported\nexec "%s" -S "$@"\n' "$py" >"$nonumpy"
chmod +x "$nonumpy"
if "$nonumpy" -c 'import numpy' 2>/dev/null; then fail "$nonumpy still imports numpy"; finish; fi
version=$("$nonumpy" -c 'import sys; print(sys.version.split()[0])')
executable=$("$nonumpy" -c 'import sys; print(sys.executable)')
expect_exit 0 "check with it passes, with a notice" -- env PREREG_PYTHON="$nonumpy" "$PREREG" check protocol.yaml
expect_err "^prereg: notice: not checked on this machine \(the environment, not the protocol\): arm numpy: cannot load layernorm from the Python file with Python $version at $executable \(PREREG_PYTHON=$nonumpy\): ModuleNotFoundError: No module named 'numpy' \(line [0-9]+\); choose another interpreter with PREREG_PYTHON=/path/to/python3" \
  "the notice names the interpreter used, the missing module and PREREG_PYTHON"
expect_line "^  arm numpy: python layernorm_numpy.py:layernorm sha256 [0-9a-f]{16}$" "check still lists the arm"
expect_exit 0 "freeze with it still freezes" -- env PREREG_PYTHON="$nonumpy" "$PREREG" freeze protocol.yaml
expect_err "^prereg: notice: not checked on this machine" "freeze gives the notice too"
v1=$(tail -n 1 "$work/out")
expect_exit 5 "run with it is exit 5" -- env PREREG_PYTHON="$nonumpy" "$PREREG" run "$v1" --out "$reports" --quiet
expect_err "^prereg: error: arm numpy: cannot load layernorm from the Python file with Python $version at $executable \(PREREG_PYTHON=$nonumpy\): ModuleNotFoundError: No module named 'numpy' \(line [0-9]+\); choose another interpreter with PREREG_PYTHON=/path/to/python3 \(.*/layernorm_numpy.py\)$" \
  "its one line names the interpreter (path and version) and PREREG_PYTHON"
[ "$(events "$v1")" = "freeze" ] && pass "the ledger records no attempt for it" || fail "ledger: $(events "$v1")"
expect_exit 5 "an interpreter that does not exist is exit 5" -- env PREREG_PYTHON="$work/no-such-python" "$PREREG" run "$v1" --out "$reports" --quiet
expect_err "no usable Python for Python arms: \`$work/no-such-python\` did not run \(not found\); choose another interpreter with PREREG_PYTHON=/path/to/python3" \
  "it names what was tried and how to choose another"
[ "$(events "$v1")" = "freeze" ] && pass "nor for that" || fail "ledger: $(events "$v1")"
[ -z "$(ls -A "$reports" 2>/dev/null)" ] && pass "no report folder was written" || fail "reports: $(ls -R "$reports")"

# --- a cuda protocol on a machine without a usable GPU: a notice, not a refusal -------------
mkdir -p "$work/gpu" && cp "$PREREG_SOURCE_DIR/examples/python/torch/protocol.yaml" "$work/gpu/"
# Its import fails inside another module's code (as torch's CUDA start does without a GPU).
printf 'import json
json.loads("{")

def layernorm(t):
    return lambda: None
' >"$work/gpu/layernorm_torch.py"
if "$PREREG" devices cuda >/dev/null 2>&1; then
  pass "skipped the GPU-less case: this machine has a usable CUDA device"
else
  expect_exit 0 "check of a cuda protocol here passes, with notices" -- "$PREREG" check "$work/gpu/protocol.yaml"
  expect_err "^prereg: notice: no usable cuda device here: .*; the outside arms were loaded, but they cannot be set up or run on this machine$"     "a notice says the device is not usable here"
  expect_err "^prereg: notice: not checked on this machine \(the environment, not the protocol\): arm torch: cannot load layernorm from the Python file: JSONDecodeError: .* \(line 2\) \(no usable cuda device here: "     "an import failure outside the file's code is the missing device's"
  sed -i 's/^device: cuda$/device: cpu/' "$work/gpu/protocol.yaml"
  expect_exit 2 "on the cpu the same failure is the arm's own" -- "$PREREG" check "$work/gpu/protocol.yaml"
  expect_err "^prereg: error: arm torch: cannot load layernorm from the Python file: JSONDecodeError: .* \(line 2\)" "one line, exit 2"
fi

# --- trap 6: a second version under the same id ----------------------------------------------
with_protocol 's/^  repetitions: 9$/  repetitions: 7/'
expect_exit 0 "freeze a second version of the id" -- "$PREREG" freeze protocol.yaml
v2=$(tail -n 1 "$work/out")
expect_err "^prereg: notice: protocol example_numpy_layernorm now has 2 frozen versions: this one ${v2:0:12} \(revision 1\) and ${v1:0:12} \(revision 1, frozen [0-9T:.Z-]+\); revision 1 is frozen more than once, so \`prereg run example_numpy_layernorm\` will need a hash or a prefix \(\`prereg run ${v2:0:12}\`\); set \`revision: 2\` to make this one the newest$" \
  "freeze says so, naming the other version's hash"
expect_exit 2 "run by id refuses: both are revision 1" -- "$PREREG" run example_numpy_layernorm --out "$reports" --quiet
expect_err "^prereg: error: 2 versions of protocol example_numpy_layernorm are frozen: ${v1:0:12} \(revision 1, frozen [0-9T:.Z-]+\), ${v2:0:12} \(revision 1, frozen [0-9T:.Z-]+\); revision 1 is frozen more than once, so the id alone names none of them: give a hash or a prefix of at least 8 hex digits$" \
  "it lists each version's hash with its revision and freeze time"

# --- both traps at once: the typo is still found, from the file's source ---------------------
with_protocol 's/^    function: layernorm$/    function: layernorm_np/'
expect_exit 2 "a typo is refused even where the file cannot be imported" -- env PREREG_PYTHON="$nonumpy" "$PREREG" check protocol.yaml
expect_err "^prereg: error: arm numpy: layernorm_numpy.py has no function layernorm_np \(it defines layernorm; did you mean 'layernorm'\?\)"   "the source binds no such name: the same refusal"
expect_exit 2 "and by freeze" -- env PREREG_PYTHON="$nonumpy" "$PREREG" freeze protocol.yaml
[ "$(events "$v1")" = "freeze" ] && [ "$(ls "$PREREG_STORE/protocols" | wc -l)" -eq 2 ] \
  && pass "nothing more is stored" || fail "store: $(ls "$PREREG_STORE/protocols")"

# --- an arm whose own code fails only where it could be loaded: a recorded attempt -----------
# (its source binds the name, but not to a function: only an import can tell)
cp layernorm_numpy.py late_arm.py && printf 'if False:\n    layernorm_np = None\n' >>late_arm.py
with_protocol 's/^id: example_numpy_layernorm$/id: first_arm_late/; s/^    python: layernorm_numpy.py$/    python: late_arm.py/; s/^    function: layernorm$/    function: layernorm_np/'
expect_exit 0 "a typo frozen where it could not be checked (no numpy)" -- env PREREG_PYTHON="$nonumpy" "$PREREG" freeze protocol.yaml
late=$(tail -n 1 "$work/out")
expect_exit 2 "its run fails on the arm's own code" -- "$PREREG" run "$late" --out "$reports" --quiet
expect_err "has no function layernorm_np" "the run says why"
[ "$(events "$late")" = "freeze run-start run-aborted" ] && pass "the arm's own failure is a recorded, aborted attempt" \
  || fail "ledger: $(events "$late")"

# --- the corrected session --------------------------------------------------------------------
cp "$pristine" protocol.yaml
expect_exit 0 "check" -- "$PREREG" check protocol.yaml
expect_line "^  arm numpy: python layernorm_numpy.py:layernorm sha256 [0-9a-f]{16}, imported with Python [0-9.]+ at .* \(PREREG_PYTHON=$py\)$" \
  "check imported the arm and names the interpreter"
expect_no_err "notice|warning" "no notice"
expect_exit 0 "freeze (already frozen by trap 5)" -- "$PREREG" freeze protocol.yaml
expect_line "is already frozen" "idempotent"
[ "$(tail -n 1 "$work/out")" = "$v1" ] && pass "the same hash" || fail "hash $(tail -n 1 "$work/out") != $v1"
expect_exit 0 "run it by hash" -- "$PREREG" run "$v1" --out "$reports" --quiet
dir1=$(tail -n 1 "$work/out")
expect_exit 0 "audit" -- "$PREREG" audit "$dir1"
expect_line "^audit PASSED: all 11 checks pass" "audit PASS"
expect_line "^PASS history: run 1 of 1; run 1 completed" "the first attempt: no aborted attempt before it"

# --- after the first run: the arm edited, check's notice, a new revision, compare ------------
echo "# tuned after the first run" >>layernorm_numpy.py
expect_exit 0 "check after editing the arm file" -- "$PREREG" check protocol.yaml
expect_err "^prereg: notice: this protocol is frozen in $PREREG_STORE as ${v1:0:12}, but python file of arm numpy changed since freezing \(frozen [0-9a-f]{12}, now [0-9a-f]{12}\): .*; this version stays refused: to measure the new code, freeze a new version: set \`revision: 2\`" \
  "check says the frozen version's arm file changed"
with_protocol 's/^prereg: 2$/prereg: 2\nrevision: 2/'
expect_exit 0 "freeze revision 2" -- "$PREREG" freeze protocol.yaml
v3=$(tail -n 1 "$work/out")
expect_exit 0 "run revision 2" -- "$PREREG" run "$v3" --out "$reports" --quiet
dir3=$(tail -n 1 "$work/out")
expect_exit 0 "compare the two revisions" -- "$PREREG" compare "$dir1" "$dir3"
expect_line "^arm numpy's code differs: A runs [0-9a-f]{12} \(python layernorm_numpy.py:layernorm\), B runs [0-9a-f]{12} \(python layernorm_numpy.py:layernorm\); its ratios compare two versions of its code$" \
  "compare names the arm whose code differs"
if grep -q "arm fused's code differs" "$work/out"; then fail "the unchanged kernel is named"; else pass "the unchanged kernel is not"; fi
finish
