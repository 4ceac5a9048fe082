#!/usr/bin/env bash
# The wheel and the Python API (docs/python.md): build the prereg-gpu wheel from this build's
# binary, install it into a fresh virtual environment of Debian's python3, check that its
# `prereg` is on the venv's PATH and passes a CPU smoke run (freeze, run, audit), run the API's
# tests and the pytest gate example with the wheel's plugin.
source "$(dirname "$0")/lib.bash"
py=/usr/bin/python3
if ! "$py" -c 'import ensurepip, pytest' 2>/dev/null; then
  # CI installs python3-venv and python3-pytest (tools/setup.sh): there a missing one fails.
  if [ -n "${CI:-}" ]; then fail "python3-venv or python3-pytest missing in CI"; finish; fi
  echo "skipped: $py lacks venv (python3-venv) or pytest (python3-pytest)"; exit 77
fi
src=$PREREG_SOURCE_DIR
wheel=$("$py" "$src/tools/wheel/build_wheel.py" "$PREREG" --out "$work/dist") &&
  pass "wheel built: $(basename "$wheel")" || fail "build_wheel.py"
case $(basename "$wheel") in
prereg_gpu-*-py3-none-*linux_*.whl) pass "wheel name and tags" ;;
*) fail "unexpected wheel name $wheel" ;;
esac
"$py" -m venv --system-site-packages "$work/venv" && pass "fresh venv" || fail "venv"
venv=$work/venv
expect_exit 0 "pip install the wheel (no index)" -- "$venv/bin/pip" install --no-index "$wheel"
# The wheel's binary is the venv's `prereg`, found on PATH once the venv is active.
on_path=$(PATH="$venv/bin:$PATH" command -v prereg)
[ "$on_path" = "$venv/bin/prereg" ] && pass "prereg on the venv's PATH" ||
  fail "prereg on PATH is $on_path"
cmp -s "$venv/bin/prereg" "$PREREG" && pass "the installed prereg is the built binary" ||
  fail "installed binary differs"
"$venv/bin/python" -c 'import prereg_gpu, sys; sys.exit(prereg_gpu.binary_path() != sys.argv[1])' \
  "$venv/bin/prereg" && pass "prereg_gpu finds the wheel's binary" || fail "binary_path()"

# CPU smoke run with the wheel's prereg: freeze, run, audit.
smoke=$src/tests/python/gate_example/gate.yaml
expect_exit 0 "wheel prereg freeze" -- "$venv/bin/prereg" freeze "$smoke"
expect_exit 0 "wheel prereg run" -- "$venv/bin/prereg" run py_gate_example --quiet \
  --out "$work/reports"
report=$(tail -n 1 "$work/out")
expect_exit 0 "wheel prereg audit" -- "$venv/bin/prereg" audit "$report"
grep -q "audit PASSED" "$work/out" && pass "audit PASSED" || fail "audit output"

# The API's tests, then the gate example through the plugin (a fresh run, then the audited
# verdict of the newest report).
expect_exit 0 "the Python API's tests (pytest)" -- \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python/api"
tail -n 3 "$work/out"; grep -E "^E " "$work/out" | head -5
expect_exit 0 "the pytest gate example" -- "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$src/tests/python/gate_example" --prereg-store "$PREREG_STORE" --prereg-reports \
  "$work/reports" --prereg-run
tail -n 3 "$work/out"; grep -E "^E " "$work/out" | head -5
# A gate that fails: the newest report changed after signing fails its audit, so the gate errors.
newest=$(ls -d "$work/reports/py_gate_example/"* | sort | tail -n 1)
sed -i 's/"median_ms":[0-9.e-]*/"median_ms":1/' "$newest/report.json"
expect_exit 1 "the gate fails on a report that fails its audit" -- "$venv/bin/python" -m pytest \
  -q -p no:cacheprovider "$src/tests/python/gate_example" --prereg-store "$PREREG_STORE" \
  --prereg-reports "$work/reports"
grep -q "audit failed" "$work/out" && pass "the failure names the audit" || fail "gate message"
finish
