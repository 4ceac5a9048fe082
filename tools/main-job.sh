#!/usr/bin/env bash
# The main job: freeze and run the default protocol — the CUDA one when a GPU is usable,
# else the CPU smoke protocol. Prints the report folder last.
set -uo pipefail
cd "$(dirname "$0")/.."
prereg=${PREREG:-build/prereg}
cuda_protocol=protocols/ln_batch1.yaml
cpu_protocol=protocols/cpu_smoke.yaml
if [ -f "$cuda_protocol" ]; then
  hash=$("$prereg" freeze "$cuda_protocol" | tail -n 1) || exit $?
  "$prereg" run "$hash" "$@"
  rc=$?
  if [ $rc -ne 5 ]; then exit $rc; fi
  echo "prereg: no usable CUDA device; running the CPU protocol instead" >&2
fi
hash=$("$prereg" freeze "$cpu_protocol" | tail -n 1) || exit $?
exec "$prereg" run "$hash" "$@"
