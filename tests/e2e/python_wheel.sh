#!/usr/bin/env bash
# The wheel and the Python API (docs/python.md): build the prereg-gpu wheel through pyproject.toml
# (scikit-build-core, pip without an index and without build isolation: Debian's backend, nothing
# downloaded), packaging this build's binary (PREREG_WHEEL_BINARY, so the project is not compiled a
# second time; PREREG_E2E_WHEEL_FULL=1 compiles it as `pip install .` does), install it into a
# fresh virtual environment of Debian's python3, check that its `prereg` is on the venv's PATH and
# passes a CPU smoke run (freeze, run, audit), run the API's tests and the pytest gate example with
# the wheel's plugin.
source "$(dirname "$0")/lib.bash"
py=/usr/bin/python3
missing=$("$py" -c '
import importlib.util as u
print(" ".join(m for m in ("ensurepip", "pytest", "scikit_build_core") if u.find_spec(m) is None))')
if [ -n "$missing" ]; then
  # CI installs python3-venv, python3-pytest and python3-scikit-build-core (tools/setup.sh, from
  # bookworm-backports on Debian 12): there a missing one fails.
  if [ -n "${CI:-}" ]; then fail "missing in CI: $missing"; finish; fi
  echo "skipped: $py lacks $missing (python3-venv, python3-pytest, python3-scikit-build-core)"; exit 77
fi
src=$PREREG_SOURCE_DIR
binary=(--config-settings="cmake.define.PREREG_WHEEL_BINARY=$PREREG")
[ -n "${PREREG_E2E_WHEEL_FULL:-}" ] && binary=()
start=$(date +%s)
expect_exit 0 "pip wheel . (scikit-build-core)" -- "$py" -m pip wheel --no-build-isolation --no-index \
  --no-deps "${binary[@]}" --config-settings="build-dir=$work/skbuild" -w "$work/dist" "$src"
echo "    the wheel took $(($(date +%s) - start)) s"
wheel=$(ls "$work"/dist/prereg_gpu-*.whl 2>/dev/null | head -n 1)
case $(basename "${wheel:-none}") in
prereg_gpu-*-py3-none-*linux_*.whl) pass "wheel name and tags: $(basename "$wheel")" ;;
*) fail "unexpected wheel name ${wheel:-none}"; tail -20 "$work/out" "$work/err"; finish ;;
esac
"$py" -m zipfile -l "$wheel" >"$work/files"
for want in prereg_gpu/__init__.py prereg_gpu/pytest_plugin.py "prereg_gpu-[^/]*.data/scripts/prereg " \
  "prereg_gpu-[^/]*.dist-info/entry_points.txt"; do
  grep -q "^$want" "$work/files" && pass "the wheel holds $want" || fail "the wheel lacks $want"
done
grep -qE '^(share|bin|include|doc)/|/docs/' "$work/files" && fail "the wheel holds install files" ||
  pass "nothing but the binary, the package and the metadata"
"$py" -m zipfile -e "$wheel" "$work/unpacked" &&
  grep -qx 'prereg_gpu = prereg_gpu.pytest_plugin' "$work"/unpacked/*.dist-info/entry_points.txt &&
  pass "the pytest11 entry point" || fail "entry point"
"$py" -m venv --system-site-packages "$work/venv" && pass "fresh venv" || fail "venv"
venv=$work/venv
expect_exit 0 "pip install the wheel (no index)" -- "$venv/bin/pip" install --no-index "$wheel"
# The wheel's binary is the venv's `prereg`, found on PATH once the venv is active.
on_path=$(PATH="$venv/bin:$PATH" command -v prereg)
[ "$on_path" = "$venv/bin/prereg" ] && pass "prereg on the venv's PATH" ||
  fail "prereg on PATH is $on_path"
if [ -z "${PREREG_E2E_WHEEL_FULL:-}" ]; then
  cmp -s "$venv/bin/prereg" "$PREREG" && pass "the installed prereg is the built binary" ||
    fail "installed binary differs"
fi
"$venv/bin/prereg" --version >/dev/null && pass "the installed prereg runs" || fail "prereg --version"
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
# verdict of the newest report; the signing key given with --prereg-key).
expect_exit 0 "the Python API's tests (pytest)" -- \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python/api"
tail -n 3 "$work/out"; grep -E "^E " "$work/out" | head -5
expect_exit 0 "the pytest gate example" -- env -u PREREG_KEY "$venv/bin/python" -m pytest -q \
  -p no:cacheprovider "$src/tests/python/gate_example" --prereg-store "$PREREG_STORE" \
  --prereg-reports "$work/reports" --prereg-run --prereg-key "$PREREG_KEY"
tail -n 3 "$work/out"; grep -E "^E " "$work/out" | head -5
# The run signed with the key --prereg-key named: no key was made at the default path.
[ ! -e "$XDG_CONFIG_HOME/prereg/signing.key" ] && pass "--prereg-key: the run used the named key" ||
  fail "a key was created at the default path: --prereg-key was not used"
# A gate that fails: the newest report changed after signing fails its audit, so the gate errors.
newest=$(ls -d "$work/reports/py_gate_example/"* | sort | tail -n 1)
sed -i 's/"median_ms":[0-9.e-]*/"median_ms":1/' "$newest/report.json"
expect_exit 1 "the gate fails on a report that fails its audit" -- "$venv/bin/python" -m pytest \
  -q -p no:cacheprovider "$src/tests/python/gate_example" --prereg-store "$PREREG_STORE" \
  --prereg-reports "$work/reports"
grep -q "audit failed" "$work/out" && pass "the failure names the audit" || fail "gate message"
finish
