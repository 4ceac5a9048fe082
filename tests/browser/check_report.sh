#!/usr/bin/env bash
# Opens report pages in headless Chromium and checks what a reader's browser would do with each:
# every chart has one series group per arm of the page's arms table, the console stays silent,
# the page requests nothing over the network; keeps a 1280-px-wide screenshot of each.
# All the pages given are checked in one Chromium session (check_pages.js), one tab per page.
#
# Usage: tests/browser/check_report.sh REPORT.html SCREENSHOT.png [REPORT.html SCREENSHOT.png]...
# Exit: 0 all checks passed on every page, 1 a check failed (the failing pages are named on the
# last line), 2 usage, 77 chromium or node missing (skipped).
# Environment: CHROMIUM (default chromium), NODE (default node).
set -euo pipefail

if [[ $# -lt 2 || $(($# % 2)) -ne 0 ]]; then
  echo "usage: $0 REPORT.html SCREENSHOT.png [REPORT.html SCREENSHOT.png]..." >&2
  exit 2
fi
chromium=${CHROMIUM:-chromium}
node=${NODE:-node}
for tool in "$chromium" "$node"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found"
    exit 77
  fi
done
args=("$@")
for ((i = 0; i < $#; i += 2)); do
  if [[ ! -f ${args[i]} ]]; then
    echo "check_report: no such file: ${args[i]}" >&2
    exit 2
  fi
  mkdir -p "$(dirname "${args[i + 1]}")"
  rm -f "${args[i + 1]}"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$node" "$(dirname "$0")/check_pages.js" "$(command -v "$chromium")" "$work" "$@"
