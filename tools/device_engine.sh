#!/usr/bin/env bash
# One call on the GPU machine for the engine redesign: the GPU tests (every CUDA arm, the
# softmax kernels, the engine on the CUDA device), compute-sanitizer memcheck over the kernel
# tests and racecheck over the softmax determinism test, the timing sweep, the main job (the
# frozen ln_batch1, run with the new binary in a scratch store copy, audited there), and the
# frozen softmax benchmark run against the committed store with the carried project key.
# Logs go to ./device-logs; the logs, the new reports and the store are tarred into
# $OUT/results.tgz (with summary.txt beside it). Never changes clocks or settings.
# Usage (on the device, from the repo root): bash tools/device_engine.sh BIN_DIR
set -uo pipefail
bin=${1:-.devbin}
final=${OUT:-out}
out=$PWD/device-logs
mkdir -p "$out" "$final"
chmod 600 .keys/signing.key
export PREREG_KEY=$PWD/.keys/signing.key PREREG_STORE=$PWD/.prereg
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,memory.used \
  --format=csv >"$out/nvidia-smi.txt" 2>&1
"$bin/prereg" --version | tee "$out/version.txt"

echo "== GPU tests"
timeout 300 "$bin/prereg_device_tests" --duration=true >"$out/device_tests.log" 2>&1
echo "device_tests rc=$?" | tee -a "$out/summary.txt"; tail -n 4 "$out/device_tests.log"

echo "== compute-sanitizer"
if command -v compute-sanitizer >/dev/null 2>&1; then
  timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/prereg_device_tests" \
    --test-case='*softmax*matches*,every CUDA arm*' >"$out/memcheck.log" 2>&1
  echo "memcheck rc=$?" | tee -a "$out/summary.txt"; tail -n 3 "$out/memcheck.log"
  timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 "$bin/prereg_device_tests" \
    --test-case='*softmax*determin*' >"$out/racecheck.log" 2>&1
  echo "racecheck rc=$?" | tee -a "$out/summary.txt"; tail -n 3 "$out/racecheck.log"
fi

echo "== bench sweep (softmax)"
timeout 120 "$bin/prereg_device_tests" --no-skip --test-case='bench: softmax*' >"$out/bench.log" 2>&1
echo "bench rc=$?" | tee -a "$out/summary.txt"

echo "== the frozen ln_batch1 with the new binary (scratch copy of the store; not committed)"
rm -rf /tmp/scratch && mkdir -p /tmp/scratch && cp -r .prereg /tmp/scratch/store
hash=$("$bin/prereg" check protocols/ln_batch1.yaml | tail -n 1)
start=$(date +%s.%N)
dir=$(PREREG_STORE=/tmp/scratch/store "$bin/prereg" run "$hash" --quiet --out /tmp/scratch/reports 2>>"$out/run.err" | tail -n 1)
rc=$?
end=$(date +%s.%N)
echo "ln_batch1 rc=$rc wall=$(awk "BEGIN{printf \"%.1f\", $end - $start}")s -> $dir" | tee -a "$out/summary.txt"
PREREG_STORE=/tmp/scratch/store "$bin/prereg" audit "$dir" >"$out/ln_batch1_audit.txt" 2>&1
echo "ln_batch1 audit rc=$?" | tee -a "$out/summary.txt"
cp "$dir/report.md" "$out/ln_batch1_report.md" 2>/dev/null

echo "== frozen softmax benchmark (committed store, project key)"
for p in protocols/bench/softmax_fp32.yaml; do
  hash=$("$bin/prereg" check "$p" | tail -n 1)
  start=$(date +%s.%N)
  dir=$("$bin/prereg" run "$hash" --quiet 2>>"$out/run.err" | tail -n 1)
  rc=$?
  end=$(date +%s.%N)
  echo "$p rc=$rc wall=$(awk "BEGIN{printf \"%.1f\", $end - $start}")s -> $dir" | tee -a "$out/summary.txt"
  "$bin/prereg" audit "$dir" >>"$out/audit.log" 2>&1
  echo "audit rc=$? $dir" | tee -a "$out/summary.txt"
  grep -E '^\| `S[0-9]`' "$dir/report.md" | tee -a "$out/summary.txt"
done
cat "$out/run.err" 2>/dev/null | tail -n 5
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >>"$out/nvidia-smi.txt" 2>&1
tar czf "$final/results.tgz" reports .prereg device-logs
cp "$out/summary.txt" "$final/"
ls -la "$final"
