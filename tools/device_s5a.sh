#!/usr/bin/env bash
# Session 5, device call A (binary of build 0abd6b8, the one that ran launch_bound's shards):
# the Nsight Compute agreement run and the no-flush try (issue 14), two back-to-back runs of
# ln_batch1 in the committed store (issue 17, item 5; progress captured through a pty so the
# phases show), the qwen arms' smoke if time is left (issue 13).
# Logs go under $OUT/logs as they are written; the committed store is saved after each run.
# Usage: BUDGET=SECONDS bash tools/device_s5a.sh BIN_DIR
set -uo pipefail
SECONDS=0
bin=${1:-.devbin}
final=${OUT:-out}
mkdir -p "$final"
out=$(cd "$final" && pwd)/logs
mkdir -p "$out"
snap() { tar czf "$final/store.tgz" reports .prereg; }
chmod 600 .keys/signing.key
export PREREG_KEY=$PWD/.keys/signing.key PREREG_STORE=$PWD/.prereg
S="$out/summary.txt"
step() { echo "== $* ($(date +%T), ${SECONDS}s)" | tee -a "$S"; }
left() { echo $(( ${BUDGET:-560} - SECONDS )); }
"$bin/prereg" --version | tee -a "$S"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$S"

step "ncu agreement: under Nsight Compute (scratch store)"
rm -rf /tmp/ncu-store && cp -r .prereg /tmp/ncu-store
h=$("$bin/prereg" check protocols/validity/ncu_agreement.yaml | tail -n 1)
s0=$SECONDS
timeout 220 env PREREG_STORE=/tmp/ncu-store PREREG_WINDOW_MARKS=1 ncu --clock-control none \
  --cache-control all --metrics gpu__time_duration.sum --csv --page raw --target-processes all \
  --log-file "$out/ncu.csv" "$bin/prereg" run "$h" --out /tmp/ncu-reports >"$out/ncu.out" 2>&1
echo "ncu rc=$? $((SECONDS - s0))s" | tee -a "$S"; tail -n 3 "$out/ncu.out" | tee -a "$S"; wc -l "$out/ncu.csv" | tee -a "$S"
nd=$(ls -d /tmp/ncu-reports/ncu_agreement/*/ 2>/dev/null | head -n 1)
[ -n "$nd" ] && cp "$nd/report.json" "$out/ncu_run_report.json"

step "ncu agreement: without the flush (exploratory try)"
sed 's/^  order: sequential/  order: sequential\n  l2_flush: false/' protocols/validity/ncu_agreement.yaml >/tmp/noflush.yaml
grep -n l2_flush /tmp/noflush.yaml | tee -a "$S"
s0=$SECONDS
nf=$(timeout 120 "$bin/prereg" try /tmp/noflush.yaml --quiet --out /tmp/try 2>>"$out/run.err" | tail -n 1)
echo "noflush try rc=$? $((SECONDS - s0))s $nf" | tee -a "$S"
[ -n "$nf" ] && cp "$nf/report.json" "$out/noflush_report.json"
alone=$(ls -d reports/ncu_agreement/*/ | head -n 1)
python3 tools/ncu_agreement.py "$alone/report.json" "${nf:+$nf/report.json}" "$out/ncu.csv" \
  >"$out/ncu_agreement.md" 2>&1; echo "analysis rc=$?" | tee -a "$S"; head -n 30 "$out/ncu_agreement.md" | tee -a "$S"

h=$("$bin/prereg" check protocols/ln_batch1.yaml | tail -n 1)
for i in 1 2; do
  [ "$(left)" -lt 150 ] && { echo "skip ln_batch1 run $i: $(left)s left" | tee -a "$S"; break; }
  step "ln_batch1 run $i (committed store, through a pty)"
  s0=$SECONDS
  timeout $(( $(left) - 20 )) script -qfc "$bin/prereg run $h" "$out/ln_batch1_$i.pty" >/dev/null 2>&1
  echo "ln_batch1 $i rc=$? $((SECONDS - s0))s" | tee -a "$S"
  tr '\r' '\n' <"$out/ln_batch1_$i.pty" | grep -v '^\s*$' | tail -n 4 | tee -a "$S"
  snap
done
d=($(ls -d reports/ln_batch1/*/ | sort | tail -n 2))
[ ${#d[@]} -eq 2 ] && "$bin/prereg" compare "${d[0]}" "${d[1]}" >"$out/ln_batch1_compare.txt" 2>&1
tail -n 12 "$out/ln_batch1_compare.txt" 2>/dev/null | tee -a "$S"

if [ "$(left)" -gt 120 ] && [ -f tools/qwen_smoke.py ]; then
  step "qwen arms smoke (outside prereg, no times)"
  PATH=/opt/torch/.venv/bin:$PATH timeout $(( $(left) - 10 )) python3 tools/qwen_smoke.py >"$out/qwen_smoke.txt" 2>&1
  echo "smoke rc=$?" | tee -a "$S"; tail -n 15 "$out/qwen_smoke.txt" | tee -a "$S"
fi
snap
echo "== done (${SECONDS}s)" | tee -a "$S"
