#!/usr/bin/env bash
# Renders the sample reports (tests/data/reports) with the unit-test binary, checks each page in
# headless Chromium with check_report.sh, then checks that the checker fails on broken pages.
#
# Usage: tests/browser/run.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, BUILD_DIR/browser)
# Screenshots are kept in OUT_DIR/shots. Exit: 0 passed, 1 failed, 77 chromium or node missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
out=${2:-$build/browser}
tests_bin=$build/tests/prereg_tests
if [[ ! -x $tests_bin ]]; then
  echo "run.sh: $tests_bin not built" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out/pages" "$out/shots" "$out/broken"

PREREG_REPORT_SAMPLES=$out/pages "$tests_bin" --source-file='*/report_text_test.cpp' \
  --test-case='sample pages for the browser check' >/dev/null

status=0
pages=("$out"/pages/*.html)
for page in "${pages[@]}"; do
  name=$(basename "$page" .html)
  echo "== $name"
  rc=0
  "$here/check_report.sh" "$page" "$out/shots/$name.png" || rc=$?
  [[ $rc -eq 77 ]] && exit 77
  [[ $rc -ne 0 ]] && status=1
done

# The checker must catch a missing series group, a network fetch and a console error.
first=${pages[0]}
sed '0,/class="series"/s//class="series-missing"/' "$first" >"$out/broken/missing_series.html"
sed -e 's|<meta http-equiv="Content-Security-Policy"[^>]*>||' \
  -e 's|<footer>|<img alt="" src="http://example.invalid/pixel.png"><footer>|' \
  "$first" >"$out/broken/network_fetch.html"
sed 's|<footer>|<script>console.error("planted")</script><footer>|' "$first" \
  >"$out/broken/console_error.html"
# And, on a renderer 2 page, a missing summary and a speedup chart without its fastest-arm rings.
r2=$out/pages/cuda_layernorm_r2.html
sed 's|<section id="summary">|<section id="overview">|' "$r2" >"$out/broken/no_summary.html"
sed 's|<circle class="winner"|<circle class="plain"|g' "$r2" >"$out/broken/no_winner.html"
for page in "$out"/broken/*.html; do
  name=$(basename "$page" .html)
  rc=0
  "$here/check_report.sh" "$page" "$out/broken/$name.png" >"$out/broken/$name.txt" || rc=$?
  if [[ $rc -eq 1 ]]; then
    echo "PASS checker rejects $name: $(grep -m1 '^FAIL' "$out/broken/$name.txt")"
  else
    echo "FAIL checker accepted $name (exit $rc)"
    status=1
  fi
done
exit $status
