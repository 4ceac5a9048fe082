#!/usr/bin/env bash
# Session 6, device call C: the RMSNorm fp16 variant of the ncu agreement (call B's timed out in
# its alone run), then compute-sanitizer memcheck over the engine's GPU tests (window marks,
# the kernel clock's case) and over `prereg try` of a tiny LayerNorm plan with the window marks
# forced on (PREREG_WINDOW_MARKS=1). Everything comes back in $OUT/logs.tgz.
# Usage: bash tools/device_s6c.sh BIN_DIR
set -uo pipefail
SECONDS=0
bin=${1:-.devbin}
final=${OUT:-out}
mkdir -p "$final"
out=/tmp/logs-s6c
mkdir -p "$out"
pack() { tar czf "$final/logs.tgz" -C /tmp logs-s6c; }
export PATH=/opt/torch/.venv/bin:$PATH
S="$out/summary.txt"
step() { echo "== $* ($(date +%T), ${SECONDS}s)" | tee -a "$S"; }
"$bin/prereg" --version | tee -a "$S"
python3 - <<'PY'
s = open("protocols/validity/ncu_agreement.yaml").read()
s = s.replace("  rows: [4096, 16384, 65536]", "  rows: [16384, 65536]").replace("passes: [fwd, fwd+bwd]", "passes: [fwd]")
s = s.replace("  repetitions: 40", "  repetitions: 15").replace("  warmup: 5", "  warmup: 2")
a, b = s.index("  - id: K3"), s.index("  - id: K4")
s = s[:a] + s[b:]
r = s.replace("operation: layernorm", "operation: rmsnorm").replace("dtype: fp32", "dtype: fp16")
r = r.replace("cols: [1024]", "cols: [896]").replace("kernel: layernorm.", "kernel: rmsnorm.")
r = r.replace("id: ncu_agreement", "id: ncu_agreement_rms")
open("/tmp/ncu_rms.yaml", "w").write(r)
t = open("protocols/validity/ncu_agreement.yaml").read()
t = t.replace("  rows: [4096, 16384, 65536]", "  rows: [128, 4096]").replace("  repetitions: 40", "  repetitions: 3")
t = t.replace("  warmup: 5", "  warmup: 1")
p = t.index("predictions:")
open("/tmp/tiny.yaml", "w").write(t[:p] + 'predictions:\n  - id: T1\n    claim: "fused is faster"\n    expect: "fused < unfused"\n')
PY
v=rms
step "$v alone (prereg try, kernel clock)"
timeout 170 "$bin/prereg" try /tmp/ncu_$v.yaml --quiet --out /tmp/alone-$v >"$out/alone_$v.out" 2>&1
echo "alone rc=$?" | tee -a "$S"
a=$(ls -d /tmp/alone-$v/*/*/ | head -n 1); cp "$a/report.json" "$out/alone_${v}_report.json"
pack
for cc in none; do
  step "$v under ncu --cache-control $cc"
  timeout 130 env PREREG_WINDOW_MARKS=1 ncu --clock-control none --cache-control $cc \
    --kernel-name regex:'ln_|rms_|prereg_window' --metrics gpu__time_duration.sum --csv --page raw \
    --target-processes all --log-file "$out/ncu_${v}_$cc.csv" \
    "$bin/prereg" try /tmp/ncu_$v.yaml --quiet --out /tmp/ncu-$v-$cc >"$out/ncu_${v}_$cc.out" 2>&1
  echo "ncu rc=$?" | tee -a "$S"
  u=$(ls -d /tmp/ncu-$v-$cc/*/*/ | head -n 1); cp "$u/report.json" "$out/ncu_${v}_${cc}_report.json"
  python3 - "$out/ncu_${v}_$cc.csv" <<'PY'
import sys
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
  echo "analysis rc=$?" | tee -a "$S"
  pack
done
step "memcheck: the engine's GPU tests"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/prereg_device_tests" \
  --test-case='a tiny*,the kernel clock*' >"$out/memcheck_tests.log" 2>&1
echo "memcheck tests rc=$?" | tee -a "$S"; tail -n 4 "$out/memcheck_tests.log" | tee -a "$S"
pack
step "memcheck: prereg try, tiny LayerNorm plan, window marks forced"
timeout 120 env PREREG_WINDOW_MARKS=1 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$bin/prereg" try /tmp/tiny.yaml --quiet --out /tmp/tiny-try >"$out/memcheck_try.log" 2>&1
echo "memcheck try rc=$?" | tee -a "$S"; tail -n 4 "$out/memcheck_try.log" | tee -a "$S"
echo "== done (${SECONDS}s)" | tee -a "$S"
pack
