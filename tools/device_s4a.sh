#!/usr/bin/env bash
# Session 4, device call A: GPU tests and memcheck of the build with the kernel clock; the
# ncu agreement (prereg alone in the committed store, the same protocol without the flush as
# an exploratory try, then under Nsight Compute in a scratch store); the launch-bound protocol;
# run-to-run disagreement of identical code (three back-to-back ln_batch1 runs, scratch store).
# Usage: bash tools/device_s4a.sh BIN_DIR   Results: $OUT/results.tgz, $OUT/summary.txt
set -uo pipefail
SECONDS=0
bin=${1:-.devbin}
final=${OUT:-out}
mkdir -p "$final"
out=$(cd "$final" && pwd)/logs # written as it goes: a call cut off at its limit still returns them
mkdir -p "$out"
snap() { tar czf "$final/store.tgz" reports .prereg; } # the committed store, after every run
chmod 600 .keys/signing.key
export PREREG_KEY=$PWD/.keys/signing.key PREREG_STORE=$PWD/.prereg
S="$out/summary.txt"
step() { echo "== $* ($(date +%T))" | tee -a "$S"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,memory.used \
  --format=csv >"$out/nvidia-smi.txt" 2>&1
"$bin/prereg" --version | tee -a "$S"
ls /usr/local/cuda/targets/x86_64-linux/lib/libcupti.so* 2>&1 | tee -a "$S"

run_committed() { # protocol file -> report dir (committed store, project key)
  local p=$1 lim=$2 hash dir rc
  hash=$("$bin/prereg" check "$p" | tail -n 1)
  dir=$(timeout "$lim" "$bin/prereg" run "$hash" 2>>"$out/run.err" | tail -n 1); rc=$?
  echo "$p rc=$rc -> $dir" | tee -a "$S"
  "$bin/prereg" audit "$dir" >>"$out/audit.log" 2>&1; echo "audit rc=$? $dir" | tee -a "$S"
  [ -n "$dir" ] && cp "$dir/report.json" "$out/$(basename "$p" .yaml)_report.json"
  snap
  echo "$dir"
}

step "ncu agreement: prereg alone"
alone=$(run_committed protocols/validity/ncu_agreement.yaml 150 | tail -n 1)
step "ncu agreement: without the flush (exploratory try)"
sed 's/^  order: sequential/  order: sequential\n  l2_flush: false/' protocols/validity/ncu_agreement.yaml >/tmp/noflush.yaml
nf=$(timeout 60 "$bin/prereg" try /tmp/noflush.yaml --quiet --out /tmp/try 2>>"$out/run.err" | tail -n 1)
echo "noflush try rc=$? $nf" | tee -a "$S"
step "launch-bound protocol"
run_committed protocols/validity/launch_bound.yaml 120 >/dev/null

step "GPU tests"
timeout 100 "$bin/prereg_device_tests" --duration=true >"$out/device_tests.log" 2>&1
echo "device_tests rc=$?" | tee -a "$S"; tail -n 4 "$out/device_tests.log" | tee -a "$S"

step "compute-sanitizer memcheck"
timeout 70 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/prereg_device_tests" \
  --test-case='*kernel clock*' >"$out/memcheck.log" 2>&1
echo "memcheck rc=$?" | tee -a "$S"; tail -n 3 "$out/memcheck.log" | tee -a "$S"

step "run-to-run: ln_batch1 three times (scratch store)"
export SCRATCH=/tmp/r2r && rm -rf $SCRATCH && mkdir -p $SCRATCH
g() { PREREG_STORE=$SCRATCH/store PREREG_KEY=$SCRATCH/key "$bin/prereg" "$@"; }
h=$(g freeze protocols/ln_batch1.yaml | tail -n 1)
r=()
for i in 1 2 3; do # run 3: the kernel clock switched off (its cost on the events)
  kc=on; [ $i = 3 ] && kc=off
  d=$(timeout 60 env PREREG_KERNEL_CLOCK=$kc PREREG_STORE=$SCRATCH/store PREREG_KEY=$SCRATCH/key "$bin/prereg" run "$h" --quiet --out $SCRATCH/reports 2>>"$out/r2r.err" | tail -n 1)
  echo "r2r run $i rc=$? $d" | tee -a "$S"; r+=("$d")
done
g compare "${r[0]}" "${r[1]}" >"$out/r2r_01.txt" 2>&1; tail -n 2 "$out/r2r_01.txt" | tee -a "$S"
g compare "${r[0]}" "${r[1]}" --vs "${r[2]}" >"$out/r2r_01v2_clockoff.txt" 2>&1; tail -n 2 "$out/r2r_01v2_clockoff.txt" | tee -a "$S"
mkdir -p "$out/r2r" && for d in "${r[@]}"; do cp "$d/report.json" "$out/r2r/$(basename "$d").json"; done
step "qwen arms smoke (outside prereg, no times; issue 13, branch h/seeds-s4)"
[ -f tools/qwen_smoke.py ] && [ $SECONDS -lt $(( ${BUDGET:-560} - 200 )) ] && timeout ${SMOKE_LIMIT:-120} python3 tools/qwen_smoke.py >"$out/qwen_smoke.txt" 2>&1
echo "smoke rc=$?" | tee -a "$S"; tail -n 20 "$out/qwen_smoke.txt" | tee -a "$S"
step "ncu agreement: under Nsight Compute (scratch store)"
rm -rf /tmp/ncu-store && cp -r .prereg /tmp/ncu-store
h=$("$bin/prereg" check protocols/validity/ncu_agreement.yaml | tail -n 1)
timeout $(( ${BUDGET:-560} - SECONDS > 60 ? ${BUDGET:-560} - SECONDS : 60 )) env PREREG_STORE=/tmp/ncu-store PREREG_WINDOW_MARKS=1 ncu --clock-control none \
  --cache-control all --metrics gpu__time_duration.sum --csv --page raw --target-processes all \
  --log-file "$out/ncu.csv" "$bin/prereg" run "$h" --quiet --out /tmp/ncu-reports >"$out/ncu.out" 2>&1
echo "ncu rc=$?" | tee -a "$S"; tail -n 3 "$out/ncu.out" | tee -a "$S"; wc -l "$out/ncu.csv" | tee -a "$S"
[ -n "$alone" ] && python3 tools/ncu_agreement.py "$alone/report.json" "${nf:-/nonexistent}/report.json" "$out/ncu.csv" \
  >"$out/ncu_agreement.md" 2>&1; echo "analysis rc=$?" | tee -a "$S"; cat "$out/ncu_agreement.md" | tee -a "$S"
[ -n "$nf" ] && cp "$nf/report.json" "$out/noflush_report.json"

tail -n 5 "$out/run.err" | tee -a "$S"
snap
echo "== done ($SECONDS s)" | tee -a "$S"
