#!/usr/bin/env bash
# On the GPU machine: the outside-arm paths on CUDA — the example CUDA plugin built with nvcc,
# torch arms through the embedded Python (eager, graph capture, a side-stream cheat), and
# torch's own timing of the same op. Usage: bash tools/device_outside.sh BIN_DIR
set -uo pipefail
bin=${1:-.devbin}
out=${OUT:-out}
mkdir -p "$out"
export PREREG_STORE=$PWD/.tmp-store PREREG_KEY=$PWD/.tmp-store/key PREREG_PYTHON=${PREREG_PYTHON:-python3}
rm -rf "$PREREG_STORE"
P=$bin/prereg
echo "== CUDA plugin"
make -C examples/plugins/cuda_rmsnorm >"$out/plugin_build.log" 2>&1; echo "build rc=$?"
"$P" arms --plugin examples/plugins/cuda_rmsnorm/libcuda_rmsnorm.so
h=$("$P" freeze examples/plugins/cuda_rmsnorm/protocol.yaml | tail -n 1)
d=$("$P" run "$h" --quiet --out "$PWD/.tmp-reports" 2>"$out/plugin_run.err" | tail -n 1); echo "plugin run rc=$? $d"; cat "$out/plugin_run.err"
[ -n "$d" ] && "$P" audit "$d" | tail -n 1 && "$P" report "$d" --format md >"$out/plugin_report.md" 2>&1
echo "== torch smoke"
h=$("$P" freeze tests/data/outside/torch_smoke.yaml | tail -n 1)
d=$("$P" run "$h" --quiet --out "$PWD/.tmp-reports" 2>"$out/torch_run.err" | tail -n 1); echo "torch run rc=$? $d"; cat "$out/torch_run.err"
[ -n "$d" ] && "$P" audit "$d" | tail -n 1 && "$P" report "$d" --format md >"$out/torch_report.md" 2>&1 && cp "$d/report.json" "$out/torch_report.json"
echo "== torch's own timing"
python3 tools/torch_timing.py --rows 128 4096 65536 --cols 1024 --reps 200 | tee "$out/torch_timing.jsonl"
