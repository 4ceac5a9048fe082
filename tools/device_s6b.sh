#!/usr/bin/env bash
# Session 6, device call B (issue 14, item 2): the kernel clock against Nsight Compute, both
# measured in one machine session by one binary. Two small exploratory variants of
# protocols/validity/ncu_agreement.yaml (fwd, 16384 and 65536 rows, 15 repetitions): LayerNorm
# fp32 x 1024 (fused, unfused) and RMSNorm fp16 x 896 (fused, unfused). Each runs once under
# prereg alone (the kernel clock) and then under `ncu --clock-control none` with
# `--cache-control none` (the cache state prereg's read sweep leaves) and `--cache-control all`
# (ncu flushes before every profiled kernel; the issue's own setting), profiling only the arms'
# kernels and the window marks. tools/ncu_agreement.py matches the windows and writes the tables.
# Usage: BUDGET=SECONDS bash tools/device_s6b.sh BIN_DIR
set -uo pipefail
SECONDS=0
bin=${1:-.devbin}
final=${OUT:-out}
mkdir -p "$final"
out=$(cd "$final" && pwd)/logs
mkdir -p "$out"
export PATH=/opt/torch/.venv/bin:$PATH
S="$out/summary.txt"
step() { echo "== $* ($(date +%T), ${SECONDS}s)" | tee -a "$S"; }
"$bin/prereg" --version | tee -a "$S"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$S"
python3 - <<'PY'
s = open("protocols/validity/ncu_agreement.yaml").read()
s = s.replace("  rows: [4096, 16384, 65536]", "  rows: [16384, 65536]").replace("passes: [fwd, fwd+bwd]", "passes: [fwd]")
s = s.replace("  repetitions: 40", "  repetitions: 15").replace("  warmup: 5", "  warmup: 2")
a, b = s.index("  - id: K3"), s.index("  - id: K4")
s = s[:a] + s[b:]
open("/tmp/ncu_ln.yaml", "w").write(s)
r = s.replace("operation: layernorm", "operation: rmsnorm").replace("dtype: fp32", "dtype: fp16")
r = r.replace("cols: [1024]", "cols: [896]").replace("kernel: layernorm.", "kernel: rmsnorm.")
r = r.replace("id: ncu_agreement", "id: ncu_agreement_rms")
open("/tmp/ncu_rms.yaml", "w").write(r)
PY
for v in ln rms; do
  step "$v alone (prereg try, kernel clock)"
  rm -rf /tmp/alone-$v
  timeout 60 "$bin/prereg" try /tmp/ncu_$v.yaml --quiet --out /tmp/alone-$v >"$out/alone_$v.out" 2>&1
  echo "alone rc=$?" | tee -a "$S"
  a=$(ls -d /tmp/alone-$v/*/*/ | head -n 1); cp "$a/report.json" "$out/alone_${v}_report.json"
  for cc in none all; do
    step "$v under ncu --cache-control $cc"
    rm -rf /tmp/ncu-$v-$cc
    timeout 100 env PREREG_WINDOW_MARKS=1 ncu --clock-control none --cache-control $cc \
      --kernel-name regex:'ln_|rms_|prereg_window' --metrics gpu__time_duration.sum --csv --page raw \
      --target-processes all --log-file "$out/ncu_${v}_$cc.csv" \
      "$bin/prereg" try /tmp/ncu_$v.yaml --quiet --out /tmp/ncu-$v-$cc >"$out/ncu_${v}_$cc.out" 2>&1
    echo "ncu rc=$?" | tee -a "$S"
    u=$(ls -d /tmp/ncu-$v-$cc/*/*/ | head -n 1); cp "$u/report.json" "$out/ncu_${v}_${cc}_report.json"
    python3 - "$out/ncu_${v}_$cc.csv" <<'PY'
import sys  # keep only the columns the analysis reads (the raw page has ~300)
import csv
rows = list(csv.reader(open(sys.argv[1], newline="")))
head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if head is not None:
    keep = [rows[head].index(k) for k in ("ID", "Kernel Name", "Grid Size", "Block Size", "gpu__time_duration.sum")]
    with open(sys.argv[1] + ".slim.csv", "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        for r in rows[head:]:
            if len(r) > max(keep):
                w.writerow([r[k] for k in keep])
PY
    rm -f "$out/ncu_${v}_$cc.csv"
    python3 tools/ncu_agreement.py "$out/alone_${v}_report.json" - "$out/ncu_${v}_$cc.csv.slim.csv" \
      "$out/ncu_${v}_${cc}_report.json" >"$out/agreement_${v}_$cc.md" 2>&1
    echo "analysis rc=$?" | tee -a "$S"; head -n 8 "$out/agreement_${v}_$cc.md" | cut -c1-60 | tee -a "$S"
  done
done
# Issue 13: qwen_decode's eager step took 32.8 ms (IQR 13.6) in prereg against 21.3 ms in the
# pilot outside it. Is it the kernel clock (CUPTI's per-launch cost, ~1,079 launches a step)?
# The same arms, exploratory, with the clock on and off, one after the other.
python3 - <<'PY'
s = open("protocols/qwen_decode.yaml").read()
a, b = s.index("arms:\n"), s.index("measurement:")
arms = """arms:
  - id: decode_hf
    python: ../kernels/python/qwen_decode.py
    function: decode_hf
  - id: decode_graph
    python: ../kernels/python/qwen_decode.py
    function: decode_graph
"""
p = s.index("predictions:")
s = s[:a] + arms + s[b:p] + """predictions:
  - id: G1
    claim: "The graph is faster"
    expect: "decode_graph < decode_hf"
"""
open("protocols/qwen_clock_probe.yaml", "w").write(s.replace("id: qwen_decode", "id: qwen_clock_probe"))
PY
export PREREG_PYTHON=python3
for k in on off; do
  step "qwen decode_hf, decode_graph, kernel clock $k"
  rm -rf /tmp/qwen-$k
  timeout 120 env PREREG_KERNEL_CLOCK=$([ $k = off ] && echo off || echo auto) "$bin/prereg" try protocols/qwen_clock_probe.yaml --quiet --out /tmp/qwen-$k >"$out/qwen_$k.out" 2>&1
  echo "qwen $k rc=$?" | tee -a "$S"; tail -n 2 "$out/qwen_$k.out" | tee -a "$S"
  q=$(ls -d /tmp/qwen-$k/*/*/ | head -n 1); cp "$q/report.json" "$out/qwen_${k}_report.json"
  python3 -c "
import json,sys; r=json.load(open(sys.argv[1]))
for c in r['cells']: print(c['arm'], round(c['median_ms'],2), round(c['iqr_ms'],2), round(min(c['samples_ms']),2), (c.get('kernel_clock') or {}).get('median_kernel_ms'))
print('kernel_clock', r['environment'].get('kernel_clock'))" "$out/qwen_${k}_report.json" | tee -a "$S"
done
uptime | tee -a "$S"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$S"
echo "== done (${SECONDS}s)" | tee -a "$S"
