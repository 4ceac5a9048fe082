#!/usr/bin/env bash
# Session 4, device call B (after call A; tools/device_s4a.sh): run-to-run disagreement of
# identical code (ln_batch1 twice with the kernel clock, once without; scratch store), a
# 2-shard run of launch_bound merged on one GPU (committed store), the ncu agreement's
# no-flush try, the protocol under Nsight Compute, the qwen smoke if time is left.
# Logs go under $OUT/logs as they are written; the committed store is saved after each run.
# Usage: BUDGET=SECONDS bash tools/device_s4b.sh BIN_DIR
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
left() { echo $(( ${BUDGET:-440} - SECONDS )); }
"$bin/prereg" --version | tee -a "$S"

step "GPU test of the kernel clock (batched records)"
[ -x "$bin/prereg_device_tests" ] && timeout 60 "$bin/prereg_device_tests" --test-case='*kernel clock*,a tiny*' >"$out/device_tests.log" 2>&1
echo "device_tests rc=$?" | tee -a "$S"; tail -n 3 "$out/device_tests.log" | tee -a "$S"

step "run-to-run: ln_batch1 (scratch store): clock on, on, off"
export SCRATCH=/tmp/r2r && rm -rf $SCRATCH && mkdir -p $SCRATCH
g() { PREREG_STORE=$SCRATCH/store PREREG_KEY=$SCRATCH/key "$bin/prereg" "$@"; }
h=$(g freeze protocols/ln_batch1.yaml 2>/dev/null | tail -n 1)
r=()
for kc in on on off; do
  s0=$SECONDS
  d=$(timeout 80 env PREREG_KERNEL_CLOCK=$kc PREREG_STORE=$SCRATCH/store PREREG_KEY=$SCRATCH/key "$bin/prereg" run "$h" --quiet --out $SCRATCH/reports 2>>"$out/r2r.err" | tail -n 1)
  echo "r2r clock=$kc rc=$? $((SECONDS - s0))s $d" | tee -a "$S"; r+=("$d")
  [ -n "$d" ] && cp "$d/report.json" "$out/r2r_${#r[@]}_$kc.json"
done
g compare "${r[0]}" "${r[1]}" >"$out/r2r_on_vs_on.txt" 2>&1; tail -n 3 "$out/r2r_on_vs_on.txt" | tee -a "$S"
g compare "${r[0]}" "${r[1]}" --vs "${r[2]}" >"$out/r2r_on_vs_off.txt" 2>&1; tail -n 3 "$out/r2r_on_vs_off.txt" | tee -a "$S"

step "2 shards of launch_bound, merged (committed store)"
h=$("$bin/prereg" check protocols/validity/launch_bound.yaml | tail -n 1)
parts=()
for k in 1 2; do
  d=$(timeout 60 "$bin/prereg" run "$h" --shard $k/2 --quiet 2>>"$out/shard.err" | tail -n 1)
  echo "shard $k/2 rc=$? $d" | tee -a "$S"; parts+=("$d"); snap
done
m=$(timeout 60 "$bin/prereg" merge "${parts[@]}" --out reports 2>>"$out/shard.err" | tail -n 1)
echo "merge rc=$? $m" | tee -a "$S"
[ -n "$m" ] && { "$bin/prereg" audit "$m" >"$out/merge_audit.txt" 2>&1; echo "merged audit rc=$?" | tee -a "$S"; tail -n 2 "$out/merge_audit.txt" | tee -a "$S"; }
tail -n 3 "$out/shard.err" | tee -a "$S"; snap

step "ncu agreement: without the flush (exploratory try)"
sed 's/^  order: sequential/  order: sequential\n  l2_flush: false/' protocols/validity/ncu_agreement.yaml >/tmp/noflush.yaml
nf=$(timeout 50 "$bin/prereg" try /tmp/noflush.yaml --quiet --out /tmp/try 2>>"$out/run.err" | tail -n 1)
echo "noflush try rc=$? $nf" | tee -a "$S"
[ -n "$nf" ] && cp "$nf/report.json" "$out/noflush_report.json"

step "ncu agreement: under Nsight Compute (scratch store)"
rm -rf /tmp/ncu-store && cp -r .prereg /tmp/ncu-store
h=$("$bin/prereg" check protocols/validity/ncu_agreement.yaml | tail -n 1)
lim=$(( $(left) - 40 )); [ $lim -lt 30 ] && lim=30
timeout $lim env PREREG_STORE=/tmp/ncu-store PREREG_WINDOW_MARKS=1 ncu --clock-control none \
  --cache-control all --metrics gpu__time_duration.sum --csv --page raw --target-processes all \
  --log-file "$out/ncu.csv" "$bin/prereg" run "$h" --out /tmp/ncu-reports >"$out/ncu.out" 2>&1
echo "ncu rc=$? (limit $lim s)" | tee -a "$S"; tail -n 3 "$out/ncu.out" | tee -a "$S"; wc -l "$out/ncu.csv" | tee -a "$S"
alone=$(ls -d reports/ncu_agreement/*/ | head -n 1)
python3 tools/ncu_agreement.py "$alone/report.json" "${nf:+$nf/report.json}" "$out/ncu.csv" \
  >"$out/ncu_agreement.md" 2>&1; echo "analysis rc=$?" | tee -a "$S"; head -n 20 "$out/ncu_agreement.md" | tee -a "$S"

if [ "$(left)" -gt 100 ] && [ -f tools/qwen_smoke.py ]; then
  step "qwen arms smoke (outside prereg, no times)"
  timeout $(( $(left) - 10 )) python3 tools/qwen_smoke.py >"$out/qwen_smoke.txt" 2>&1
  echo "smoke rc=$?" | tee -a "$S"; tail -n 15 "$out/qwen_smoke.txt" | tee -a "$S"
fi
snap
echo "== done (${SECONDS}s)" | tee -a "$S"
