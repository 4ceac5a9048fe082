# End-to-end: outside arms are shown by what they run (issue 37, item 5). `prereg show` names a
# Python arm's file and function and a plugin's library and name, with the frozen SHA-256 of the
# file; a report (renderer 3) names them with the hash in its arms table, reads "not measured"
# for the numpy arm's peak memory (never 0), and audits clean (its pages regenerate).
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: $py has no numpy"; exit 77; }
export PREREG_PYTHON=$py
mkdir -p "$work/arms"
cp "$PREREG_SOURCE_DIR/tests/data/outside/numpy_arms.py" "$work/arms/"
cat >"$work/arms/protocol.yaml" <<'EOF'
prereg: 2
id: e2e_show_numpy
title: a numpy arm beside a built-in one
hypothesis: both arms are shown by what they run
device: cpu
operation: layernorm
dtype: fp32
axes:
  rows: [16]
  cols: [256]
passes: [fwd]
arms:
  - id: builtin
    kernel: layernorm.fused
  - id: np_ok
    python: numpy_arms.py
    function: layernorm
measurement:
  repetitions: 5
  warmup: 1
analysis:
  bootstrap_resamples: 200
predictions:
  - id: P1
    claim: the built-in arm takes less than a second
    expect: time(builtin) < 1000
EOF
py_sha=$(sha256sum "$work/arms/numpy_arms.py" | cut -c1-64)

# --- show: a Python arm ----------------------------------------------------------------------
expect_exit 0 "freeze a protocol with a Python arm" -- "$PREREG" freeze "$work/arms/protocol.yaml"
hash=$(tail -n 1 "$work/out")
expect_exit 0 "show it" -- "$PREREG" show "$hash"
cp "$work/out" "$work/show.txt"
has_line() { grep -qxF -- "$1" "$work/show.txt"; }
has_line "    np_ok: python: numpy_arms.py  function: layernorm" \
  && pass "show's arms name the Python file as written and its function" \
  || fail "arms of show: $(sed -n '/^  arms:/,/^  predictions:/p' "$work/show.txt")"
has_line "    np_ok: python: arms/numpy_arms.py  function: layernorm  sha256: $py_sha" \
  && pass "show's freeze record names the resolved file, the function and its SHA-256" \
  || fail "kernels of show: $(sed -n '/^  kernels:/,/^runs/p' "$work/show.txt")"
has_line "    builtin: kernel layernorm.fused" && pass "a kernel arm is shown as before" \
  || fail "kernel arm in show"
grep -qE "^    builtin: layernorm\.fused [0-9a-f]{64}$" "$work/show.txt" \
  && pass "a kernel arm's freeze record keeps its source hash" || fail "kernel hash in show"
grep -qE '^    [A-Za-z0-9_]+: *$' "$work/show.txt" && fail "an arm is listed with nothing after it" \
  || pass "no arm is listed blank"

# --- show: a plugin arm ----------------------------------------------------------------------
if command -v "${CC:-cc}" >/dev/null && command -v make >/dev/null; then
  cp -r "$PREREG_SOURCE_DIR/examples/plugins/cpu_layernorm" "$work/plugin"
  make -C "$work/plugin" PREREG_INCLUDE="$PREREG_SOURCE_DIR/runner/include" >/dev/null 2>&1 \
    || fail "the example plugin does not build"
  so_sha=$(sha256sum "$work/plugin/libcpu_layernorm.so" | cut -c1-64)
  expect_exit 0 "freeze a protocol with a plugin arm" -- "$PREREG" freeze "$work/plugin/protocol.yaml"
  expect_exit 0 "show it" -- "$PREREG" show "$(tail -n 1 "$work/out")"
  grep -qxF "    mine: plugin: libcpu_layernorm.so  name: cpu_layernorm" "$work/out" \
    && pass "show's arms name the library and the arm's name in it" || fail "plugin arm: $(cat "$work/out")"
  grep -qxF "    mine: plugin: plugin/libcpu_layernorm.so  name: cpu_layernorm  sha256: $so_sha" "$work/out" \
    && pass "show's freeze record names the library and its SHA-256" || fail "plugin record: $(cat "$work/out")"
else
  echo "note: no C compiler or make: the plugin part is left out"
fi

# --- the report: renderer 3 (and every later renderer) ----------------------------------------
expect_exit 0 "run the Python-arm protocol" -- "$PREREG" run "$hash" --out "$work/reports" --quiet
dir=$(tail -n 1 "$work/out")
renderer=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['tool']['renderer'])" \
  "$dir/report.json")
[ "$renderer" -ge 3 ] && pass "a new report records renderer $renderer (3 or later)" \
  || fail "tool.renderer is $renderer, not 3 or later"
grep -qF "| \`np_ok\` | python: \`arms/numpy_arms.py\` | function: \`layernorm\` | \`${py_sha:0:16}\` | stream | 1 |" \
  "$dir/report.md" && pass "report.md's arms table names file, function and hash" \
  || fail "arms table: $(grep -F '| `np_ok` |' "$dir/report.md" | head -3)"
grep -qF "| \`np_ok\` | not measured |" "$dir/report.md" \
  && pass "report.md: the numpy arm's peak memory is not measured" \
  || fail "peak row: $(grep -A6 'Peak memory' "$dir/report.md"); failures: $(grep -iE 'fail|error|skip' "$dir/report.md" | head -5)"
grep -qF "<td>function: <code>layernorm</code></td><td title=\"$py_sha\">" "$dir/report.html" \
  && pass "report.html names the function, the full hash as the tooltip" || fail "report.html arms table"
grep -qF "np_ok (peak memory not measured)" "$dir/report.html" \
  && pass "report.html's peak chart says so in its legend" || fail "peak chart legend"
expect_exit 0 "the report audits clean" -- "$PREREG" audit "$dir"
grep -qF "PASS pages: report.md and report.html are exactly what renderer $renderer makes" "$work/out" \
  && pass "the audit regenerates the pages with renderer $renderer" || fail "pages: $(grep pages "$work/out")"
finish
