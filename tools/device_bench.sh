#!/usr/bin/env bash
# On a CUDA machine: the GPU tests, a memcheck pass over the kernel tests, and the timing sweep.
# Logs go to $OUT (the device tool's folder) or ./out. Never changes clocks or device settings.
#   usage: tools/device_bench.sh [path/to/prereg_device_tests]
set -uo pipefail
bin=${1:-build-cuda/tests/prereg_device_tests}
out=${OUT:-out}
mkdir -p "$out"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,memory.used --format=csv \
  2>&1 | tee "$out/nvidia-smi.txt"

"$bin" --duration=true 2>&1 | tee "$out/device_tests.log"
rc_tests=${PIPESTATUS[0]}

rc_memcheck=skipped
if command -v compute-sanitizer >/dev/null 2>&1; then
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" \
    --test-case='every CUDA arm*' > "$out/memcheck.log" 2>&1
  rc_memcheck=$?
  tail -n 5 "$out/memcheck.log"
fi

"$bin" --no-skip --test-case='bench*' 2>&1 | tee "$out/bench.log"
rc_bench=${PIPESTATUS[0]}

nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv 2>&1 | tee -a "$out/nvidia-smi.txt"
echo "device_tests rc=$rc_tests memcheck rc=$rc_memcheck bench rc=$rc_bench"
