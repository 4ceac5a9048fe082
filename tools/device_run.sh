#!/usr/bin/env bash
# The default device call: tools/device/run.sh over tools/device/plans/default.plan (the GPU
# tests, the README's main job in a store of its own, compute-sanitizer memcheck and racecheck
# over the kernel tests). Other calls take a plan of their own: tools/device/README.md.
# Usage (on the device, from the repo root): bash tools/device_run.sh [--dry-run] [BIN_DIR]
#   BIN_DIR: the carried static binaries (prereg, prereg_device_tests); default .devbin
# Results: $OUT/results.tgz (unpack at the repo root) and $OUT/summary.txt.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dry=()
if [ "${1:-}" = --dry-run ]; then dry=(--dry-run); shift; fi
exec bash "$here/device/run.sh" "${dry[@]}" --bin "${1:-.devbin}" "$here/device/plans/default.plan"
