#!/usr/bin/env bash
# One call on the GPU machine after issue 12's merge (and 14's neighbours 16, 17): the GPU tests,
# compute-sanitizer memcheck over the kernel tests, the multi-arch fat binary (cuobjdump) and
# which code the driver picked, the guards with torch arms (a side-stream cheat), the example
# CUDA plugin built with nvcc, and attempt 2 of the frozen peers protocols against the
# committed store with the carried project key. Results in $OUT/results.tgz + summary.txt.
# Usage: bash tools/device_final.sh BIN_DIR
set -uo pipefail
bin=${1:-.devbin}
final=${OUT:-out}
out=$PWD/device-logs
rm -rf "$out" && mkdir -p "$out" "$final"
chmod 600 .keys/signing.key
export PREREG_KEY=$PWD/.keys/signing.key PREREG_STORE=$PWD/.prereg PREREG_PYTHON=${PREREG_PYTHON:-python3}
S="$out/summary.txt"
step() { echo "== $*" | tee -a "$S"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,memory.used \
  --format=csv >"$out/nvidia-smi.txt" 2>&1
"$bin/prereg" --version | tee -a "$S"
"$bin/prereg" devices cuda 2>&1 | tee -a "$S"

step "GPU tests"
timeout 200 "$bin/prereg_device_tests" --duration=true >"$out/device_tests.log" 2>&1
echo "device_tests rc=$?" | tee -a "$S"; tail -n 4 "$out/device_tests.log" | tee -a "$S"

step "compute-sanitizer"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/prereg_device_tests" \
  --test-case='*softmax*matches*,every CUDA arm*' >"$out/memcheck.log" 2>&1
echo "memcheck rc=$?" | tee -a "$S"; tail -n 3 "$out/memcheck.log" | tee -a "$S"

step "fat binary"
cuobjdump --list-elf "$bin/prereg" 2>&1 | sed 's/.*\.\(sm_[0-9a-z]*\)\..*/\1/' | sort | uniq -c | tee -a "$S"
cuobjdump --list-ptx "$bin/prereg" 2>&1 | sed 's/.*\.\(sm_[0-9a-z]*\)\..*/\1/' | sort | uniq -c | tee -a "$S"

step "guards with torch arms (scratch store)"
export SCRATCH=/tmp/scratch && rm -rf $SCRATCH && mkdir -p $SCRATCH
g() { PREREG_STORE=$SCRATCH/store PREREG_KEY=$SCRATCH/key "$bin/prereg" "$@"; }
h=$(g freeze tests/data/outside/torch_guards.yaml | tail -n 1)
d=$(timeout 120 env PREREG_STORE=$SCRATCH/store PREREG_KEY=$SCRATCH/key "$bin/prereg" run "$h" --quiet --out $SCRATCH/reports 2>"$out/guards.err" | tail -n 1)
echo "guards run rc=$? $d" | tee -a "$S"; cat "$out/guards.err" | tee -a "$S"
[ -n "$d" ] && { g audit "$d" | tail -n 1 | tee -a "$S"; cp "$d/report.json" "$out/guards_report.json"; }

step "example CUDA plugin"
mkdir -p $SCRATCH/inc && cp -r .devbin/include/dlpack $SCRATCH/inc/ 2>/dev/null
timeout 120 make -C examples/plugins/cuda_rmsnorm DLPACK_INCLUDE=$SCRATCH/inc >"$out/plugin_build.log" 2>&1
echo "plugin build rc=$?" | tee -a "$S"
g arms --plugin examples/plugins/cuda_rmsnorm/libcuda_rmsnorm.so 2>&1 | tee -a "$S"
h=$(g freeze examples/plugins/cuda_rmsnorm/protocol.yaml | tail -n 1)
d=$(timeout 120 env PREREG_STORE=$SCRATCH/store PREREG_KEY=$SCRATCH/key "$bin/prereg" run "$h" --quiet --out $SCRATCH/reports 2>"$out/plugin.err" | tail -n 1)
echo "plugin run rc=$? $d" | tee -a "$S"; cat "$out/plugin.err" | tee -a "$S"
[ -n "$d" ] && { g audit "$d" | tail -n 1 | tee -a "$S"; cp "$d/report.json" "$out/plugin_report.json"; }

step "peers, attempt 2 (committed store, project key)"
for p in ${PEERS:-protocols/peers_layernorm.yaml protocols/peers_rmsnorm.yaml}; do
  hash=$("$bin/prereg" check "$p" | tail -n 1)
  start=$(date +%s.%N)
  dir=$(timeout 200 "$bin/prereg" run "$hash" --quiet 2>>"$out/run.err" | tail -n 1)
  rc=$?
  end=$(date +%s.%N)
  echo "$p rc=$rc wall=$(awk "BEGIN{printf \"%.1f\", $end - $start}")s -> $dir" | tee -a "$S"
  "$bin/prereg" audit "$dir" >>"$out/audit.log" 2>&1
  echo "audit rc=$? $dir" | tee -a "$S"
done
tail -n 5 "$out/run.err" | tee -a "$S"
tar czf "$final/results.tgz" device-logs reports .prereg
cp "$S" "$final/summary.txt"
