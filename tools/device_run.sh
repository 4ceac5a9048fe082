#!/usr/bin/env bash
# One call on the GPU machine: the GPU tests, then every shipped CUDA protocol run against the
# committed store (./.prereg) with the carried project key, each report audited there; the
# new reports and the store come back as one tarball in $OUT.
# Usage (on the device, from the repo root): bash tools/device_run.sh BIN_DIR
set -uo pipefail
bin=${1:-.devbin}
out=${OUT:-out}
mkdir -p "$out"
chmod 600 .keys/signing.key
export PREREG_KEY=$PWD/.keys/signing.key PREREG_STORE=$PWD/.prereg
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
"$bin/prereg" --version | tee "$out/version.txt"

echo "== GPU tests"
"$bin/prereg_device_tests" --duration=true >"$out/device_tests.log" 2>&1
echo "device_tests rc=$?"; tail -n 4 "$out/device_tests.log"

echo "== main job (README): freeze + run the default CUDA protocol"
start=$(date +%s.%N)
MAIN_JOB_STORE=$PREREG_STORE MAIN_JOB_OUT=reports PREREG=$bin/prereg bash tools/main-job.sh --quiet >"$out/main-job.out" 2>"$out/main-job.err"
rc=$?
end=$(date +%s.%N)
echo "main-job rc=$rc wall=$(awk "BEGIN{printf \"%.1f\", $end - $start}")s -> $(tail -n 1 "$out/main-job.out")" | tee -a "$out/runs.txt"
cat "$out/main-job.err"

for p in protocols/ln_model_step.yaml protocols/rmsnorm_qwen.yaml protocols/bench/*.yaml; do
  hash=$("$bin/prereg" check "$p" | tail -n 1)
  start=$(date +%s.%N)
  dir=$("$bin/prereg" run "$hash" --quiet 2>>"$out/run.err" | tail -n 1)
  rc=$?
  end=$(date +%s.%N)
  echo "$p rc=$rc wall=$(awk "BEGIN{printf \"%.1f\", $end - $start}")s -> $dir" | tee -a "$out/runs.txt"
done

echo "== audits"
for d in reports/*/*/; do
  "$bin/prereg" audit "$d" >>"$out/audit.log" 2>&1
  echo "audit rc=$? $d" | tee -a "$out/runs.txt"
done
for d in reports/*/*/; do
  echo "== $d"; grep -E '^\| `[A-Z][0-9]`' "$d/report.md" | head -n 12
done | tee "$out/verdicts.txt"
tar czf "$out/results.tgz" reports .prereg
ls -la "$out"
