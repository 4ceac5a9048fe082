#!/usr/bin/env bash
# Session 6, device call A: the whole GPU test suite (prereg_device_tests); the kernel clock
# against Nsight Compute on a small exploratory variant of ncu_agreement (issue 14: the frozen
# protocol under ncu needs more than 220 s, ~0.12 s per profiled kernel); then the qwen arms'
# smoke outside prereg, timing nothing (issue 13, before qwen_decode.yaml is frozen).
# Logs go under $OUT/logs as they are written; the committed store is saved after each run.
# Usage: BUDGET=SECONDS bash tools/device_s6a.sh BIN_DIR
set -uo pipefail
SECONDS=0
bin=${1:-.devbin}
final=${OUT:-out}
mkdir -p "$final"
out=$(cd "$final" && pwd)/logs
mkdir -p "$out"
snap() { tar czf "$final/store.tgz" reports .prereg; }
chmod 600 .keys/signing.key
export PREREG_KEY=$PWD/.keys/signing.key PREREG_STORE=$PWD/.prereg PREREG_PYTHON=python3
export PATH=/opt/torch/.venv/bin:$PATH
S="$out/summary.txt"
step() { echo "== $* ($(date +%T), ${SECONDS}s)" | tee -a "$S"; }
left() { echo $(( ${BUDGET:-560} - SECONDS )); }
"$bin/prereg" --version | tee -a "$S"
which python3 | tee -a "$S"

step "GPU tests"
timeout 150 "$bin/prereg_device_tests" >"$out/device_tests.log" 2>&1
echo "device_tests rc=$?" | tee -a "$S"; tail -n 3 "$out/device_tests.log" | tee -a "$S"

step "ncu agreement: a small exploratory variant under Nsight Compute"
python3 - <<'PY'
s = open("protocols/validity/ncu_agreement.yaml").read()
s = s.replace("  rows: [4096, 16384, 65536]", "  rows: [16384, 65536]").replace("passes: [fwd, fwd+bwd]", "passes: [fwd]")
s = s.replace("  repetitions: 40", "  repetitions: 15").replace("  warmup: 5", "  warmup: 2")
a, b = s.index("  - id: K3"), s.index("  - id: K4")
open("/tmp/ncu_small.yaml", "w").write(s[:a] + s[b:])
PY
s0=$SECONDS
timeout 150 env PREREG_WINDOW_MARKS=1 ncu --clock-control none --cache-control all \
  --kernel-name regex:'ln_|prereg_window' --metrics gpu__time_duration.sum --csv --page raw \
  --target-processes all --log-file "$out/ncu_small.csv" \
  "$bin/prereg" try /tmp/ncu_small.yaml --quiet --out /tmp/ncu-try >"$out/ncu_small.out" 2>&1
echo "ncu rc=$? $((SECONDS - s0))s" | tee -a "$S"; tail -n 3 "$out/ncu_small.out" | tee -a "$S"
under=$(ls -d /tmp/ncu-try/ncu_agreement/*/ 2>/dev/null | head -n 1)
[ -n "$under" ] && cp "$under/report.json" "$out/ncu_small_report.json"
python3 - "$out/ncu_small.csv" <<'PY'
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
rm -f "$out/ncu_small.csv.agreement.json"
alone=$(ls -d reports/ncu_agreement/*/ | head -n 1)
python3 tools/ncu_agreement.py "$alone/report.json" tools/../docs/evidence/ncu_noflush_report.json \
  "$out/ncu_small.csv.slim.csv" "$out/ncu_small_report.json" >"$out/ncu_agreement.md" 2>&1
echo "analysis rc=$?" | tee -a "$S"; head -n 20 "$out/ncu_agreement.md" | tee -a "$S"
rm -f "$out/ncu_small.csv"

step "qwen arms smoke (outside prereg, no times)"
timeout 260 python3 tools/qwen_smoke.py >"$out/qwen_smoke.txt" 2>&1
echo "smoke rc=$?" | tee -a "$S"; tail -n 15 "$out/qwen_smoke.txt" | tee -a "$S"

snap
echo "== done (${SECONDS}s)" | tee -a "$S"
