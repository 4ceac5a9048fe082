#!/usr/bin/env bash
# Builds `prereg site` over the committed store and reports (docs/site.md) and checks every page
# in headless Chromium (check_pages.js with PREREG_PAGE_KIND=site: the index's links, each
# protocol page's sections and trend charts, a silent console, no network), then checks that the
# checker catches a planted network fetch on a site page.
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

# The checker must fail a site page that fetches over the network.
page=$(ls "$out"/site/p-*.html | head -n 1)
sed -e 's|<meta http-equiv="Content-Security-Policy"[^>]*>||' \
  -e 's|<h2>Steps</h2>|<img alt="" src="http://example.invalid/pixel.png"><h2>Steps</h2>|' \
  "$page" >"$out/broken/network_fetch.html"
if PREREG_PAGE_KIND=site "$here/check_report.sh" "$out/broken/network_fetch.html" \
  "$out/broken/network_fetch.png" >"$out/broken/log" 2>&1; then
  echo "check_site: the checker passed a page that fetches over the network" >&2
  exit 1
fi
echo "check_site: the checker caught the planted fetch"
echo "check_site: all site pages passed"
