#!/usr/bin/env bash
# Renders the sample reports (tests/data/reports) with the unit-test binary, checks the pages in
# headless Chromium with check_report.sh (one session for all of them), then checks that the
# checker fails on broken pages, each for its own fault, in a session shared with a good page.
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
args=()
for page in "${pages[@]}"; do args+=("$page" "$out/shots/$(basename "$page" .html).png"); done
rc=0
"$here/check_report.sh" "${args[@]}" || rc=$?
[[ $rc -eq 77 ]] && exit 77
[[ $rc -ne 0 ]] && status=1

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
# One session for the broken pages and, among them, a good one that must still pass: a failure
# is charged to its own page only.
broken=("$out"/broken/*.html)
args=("${broken[0]}" "$out/broken/$(basename "${broken[0]}" .html).png" "$first" "$out/broken/good.png")
for page in "${broken[@]:1}"; do args+=("$page" "$out/broken/$(basename "$page" .html).png"); done
rc=0
"$here/check_report.sh" "${args[@]}" >"$out/broken/session.txt" || rc=$?
[[ $rc -eq 1 ]] || { echo "FAIL checker exited $rc on the broken pages, wanted 1"; status=1; }
# section PAGE: the checker's lines for PAGE, from its "== PAGE" line to its verdict.
section() { awk -v p="== $1" '$0 == p {on = 1} on {print} on && /^page (passed|FAILED)/ {exit}' "$out/broken/session.txt"; }
if section "$first" | grep -q '^page passed$'; then
  echo "PASS checker passes the good page in the broken pages' session"
else
  echo "FAIL checker failed the good page in the broken pages' session"
  status=1
fi
for page in "${broken[@]}"; do
  name=$(basename "$page" .html)
  case $name in # the check that must fail on each
  missing_series) want='one series group per arm' ;;
  network_fetch) want='the page requested nothing from the network' ;;
  console_error) want='no console messages or errors' ;;
  no_summary) want='summary section present' ;;
  no_winner) want='one fastest arm ringed per rows' ;;
  esac
  if section "$page" | grep -q '^page FAILED' && section "$page" | grep -q "^FAIL .*$want"; then
    echo "PASS checker rejects $name: $(section "$page" | grep -m1 "^FAIL .*$want")"
  else
    echo "FAIL checker accepted $name, or failed it without the check '$want'"
    status=1
  fi
done
exit $status
