#!/usr/bin/env bash
# On the GPU machine: the frozen peers protocols (prereg's CUDA arms beside PyTorch eager,
# torch.compile, the HF composite and Triton) against the committed store with the carried
# project key, each report audited there; torch's own timing of the same ops; the example CUDA
# plugin. Results tarred into $OUT/results.tgz. Usage: bash tools/device_peers.sh BIN_DIR
set -uo pipefail
bin=${1:-.devbin}
final=${OUT:-out}
out=$PWD/device-logs
mkdir -p "$out" "$final"
chmod 600 .keys/signing.key
export PREREG_KEY=$PWD/.keys/signing.key PREREG_STORE=$PWD/.prereg PREREG_PYTHON=${PREREG_PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,memory.used \
  --format=csv >"$out/nvidia-smi.txt" 2>&1
for p in ${PEERS:-protocols/peers_layernorm.yaml protocols/peers_rmsnorm.yaml}; do
  hash=$("$bin/prereg" check "$p" | tail -n 1)
  start=$(date +%s.%N)
  dir=$("$bin/prereg" run "$hash" --quiet 2>>"$out/run.err" | tail -n 1)
  rc=$?
  end=$(date +%s.%N)
  echo "$p rc=$rc wall=$(awk "BEGIN{printf \"%.1f\", $end - $start}")s -> $dir" | tee -a "$out/summary.txt"
  "$bin/prereg" audit "$dir" >>"$out/audit.log" 2>&1
  echo "audit rc=$? $dir" | tee -a "$out/summary.txt"
done
cat "$out/run.err" 2>/dev/null | tail -n 5
echo "== torch's own timing" | tee -a "$out/summary.txt"
python3 tools/torch_timing.py --op layernorm --dtype fp32 --rows 128 65536 --cols 1024 >"$out/torch_timing.jsonl" 2>&1
python3 tools/torch_timing.py --op rmsnorm --dtype fp16 --rows 16 2048 65536 --cols 896 >>"$out/torch_timing.jsonl" 2>&1
cat "$out/torch_timing.jsonl" | tee -a "$out/summary.txt"
tar czf "$final/results.tgz" device-logs reports .prereg
cp "$out/summary.txt" "$final/summary.txt"
