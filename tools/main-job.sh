#!/usr/bin/env bash
# The main job: freeze and run the default protocol — the CUDA one when a GPU is usable,
# else the CPU smoke protocol. Prints the report folder last.
#
# It writes into a store and a reports folder of its own, out/main-job/store and
# out/main-job/reports (ignored by git), never into the project's committed record (.prereg/,
# reports/): a first run here is attempt 1 of your own store and leaves `git status` clean.
# MAIN_JOB_STORE and MAIN_JOB_OUT choose other folders.
set -uo pipefail
cd "$(dirname "$0")/.."
prereg=${PREREG:-build/prereg}
store=${MAIN_JOB_STORE:-out/main-job/store}
out=${MAIN_JOB_OUT:-out/main-job/reports}
cuda_protocol=protocols/ln_batch1.yaml
cpu_protocol=protocols/cpu_smoke.yaml
echo "prereg main job: store $store, reports $out" >&2

protocol=$cpu_protocol
if [ -f "$cuda_protocol" ]; then
  # Probe first, so that a machine without a GPU gets a plain notice, not an error line.
  why=$("$prereg" devices cuda)
  rc=$?
  if [ $rc -eq 0 ]; then
    protocol=$cuda_protocol
  elif [ $rc -eq 5 ]; then
    echo "prereg main job: ${why#cuda: }; running $cpu_protocol on the CPU instead" >&2
  else
    exit $rc
  fi
fi
hash=$("$prereg" freeze --store "$store" "$protocol" | tail -n 1) || exit $?
exec "$prereg" run --store "$store" --out "$out" "$hash" "$@"
