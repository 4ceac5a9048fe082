#!/usr/bin/env bash
# Builds `prereg site` over the committed store and reports (docs/site.md) and checks every page
# in headless Chromium (check_pages.js with PREREG_PAGE_KIND=site: the index's links and revision
# labels, each protocol page's sections, links to the reports, verdict badges and trend charts, a
# silent console, no network), then checks that the checker catches a planted network fetch, a
# report link that leads nowhere and verdict badges that lost their prediction ids.
#
# Usage: tests/browser/check_site.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, BUILD_DIR/site)
# Exit: 0 passed, 1 failed, 77 chromium or node missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${1:-build}
out=${2:-$build/site}
rm -rf "$out"
mkdir -p "$out/shots" "$out/broken"
"$build/prereg" site "$repo/.prereg" "$repo/reports" --out "$out/site" | tail -n 2
args=()
for page in "$out"/site/*.html; do args+=("$page" "$out/shots/$(basename "$page" .html).png"); done
rc=0
PREREG_PAGE_KIND=site "$here/check_report.sh" "${args[@]}" || rc=$?
[[ $rc -eq 77 ]] && exit 77
[[ $rc -ne 0 ]] && exit 1

# The checker must fail a site page that fetches over the network, one whose report links lead
# nowhere, and one whose badges show a lone letter (the old c/r/i) instead of the prediction id;
# each for its own check (broken/ is as deep as site/, so the good links resolve from both).
page=$(grep -l 'class="b v ' "$out"/site/p-*.html | head -n 1)
sed -e 's|<meta http-equiv="Content-Security-Policy"[^>]*>||' \
  -e 's|<h2>Steps</h2>|<img alt="" src="http://example.invalid/pixel.png"><h2>Steps</h2>|' \
  "$page" >"$out/broken/network_fetch.html"
sed -e 's|/report\.html"|/gone/report.html"|g' "$page" >"$out/broken/dead_links.html"
sed -E 's/(class="b v [a-z]+"[^>]*>)[^<]*(<span class="vh">)/\1c\2/g' "$page" \
  >"$out/broken/letter_badges.html"
status=0
for name in network_fetch dead_links letter_badges; do
  case $name in # the check that must fail on each
  network_fetch) want='the page requested nothing from the network' ;;
  dead_links) want='every link to a report leads to its page' ;;
  letter_badges) want='every verdict badge names its prediction and claim' ;;
  esac
  log=$out/broken/$name.log
  if PREREG_PAGE_KIND=site "$here/check_report.sh" "$out/broken/$name.html" \
    "$out/broken/$name.png" >"$log" 2>&1; then
    echo "check_site: the checker passed the broken page $name" >&2
    status=1
  elif grep -q "^FAIL $want" "$log"; then
    echo "check_site: the checker caught $name: $(grep -m1 "^FAIL $want" "$log")"
  else
    echo "check_site: the checker failed $name without the check '$want'" >&2
    cat "$log" >&2
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "check_site: all site pages passed"
exit $status
