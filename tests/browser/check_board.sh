#!/usr/bin/env bash
# A leaderboard's pages in headless Chromium (docs/grading.md, "The leaderboard"): the sample
# leaderboard.html and the site's board page that tests/grade_test.cpp renders from a
# leaderboard of three entries (one excluded), checked by check_pages.js with
# PREREG_PAGE_KIND=board (a row per entry, no rank on an excluded row, the ranked rows first,
# each drawing its interval; a silent console; nothing fetched); then a page whose excluded row
# claims a rank must fail.
#
# Usage: tests/browser/check_board.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, BUILD_DIR/board)
# Exit: 0 passed, 1 failed, 77 chromium or node missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
out=${2:-$build/board}
rm -rf "$out"
mkdir -p "$out/pages" "$out/shots" "$out/broken"
PREREG_BOARD_SAMPLES=$out/pages "$build/tests/prereg_tests" --source-file='*/grade_test.cpp' \
  --test-case='the leaderboard is built in rank order and rendered' >/dev/null
args=()
for page in "$out"/pages/*.html; do args+=("$page" "$out/shots/$(basename "$page" .html).png"); done
rc=0
PREREG_PAGE_KIND=board "$here/check_report.sh" "${args[@]}" || rc=$?
[[ $rc -eq 77 ]] && exit 77
[[ $rc -ne 0 ]] && exit 1
sed 's|data-excluded="true"><td class="rank">-</td>|data-excluded="true"><td class="rank">1</td>|' \
  "$out/pages/leaderboard.html" >"$out/broken/ranked_exclusion.html"
if PREREG_PAGE_KIND=board "$here/check_report.sh" "$out/broken/ranked_exclusion.html" \
  "$out/broken/ranked_exclusion.png" >"$out/broken/log" 2>&1; then
  echo "check_board: the checker passed a page that ranks an excluded submission" >&2
  exit 1
fi
echo "check_board: the checker caught the ranked exclusion"
echo "check_board: all leaderboard pages passed"
