#!/usr/bin/env bash
# Session 7, device call C.
# 1. Issue 15: the whole GPU suite with the session-7 fused kernels (the spread small-row
#    forward, the two-sweep wide path to 65536 columns, the widened 16-bit LayerNorm backward);
#    then, only if it passed, the three benchmark protocols frozen before this call
#    (bench_small_layernorm_fp32, bench_small_rmsnorm_fp16, bench_graph_layernorm_fp32),
#    signed with the carried project key and audited; compute-sanitizer memcheck and racecheck
#    over the new kernels' test cases.
# 2. Issue 13, item 1: the pure-Python microbench after each piece of host work prereg does
#    before a Python arm's window, in a plain python3, and inside prereg again.
# 3. Issue 15, exploratory: the wide path and 16-bit shapes with the kernel clock on.
# Usage: BUDGET=SECONDS bash tools/device_s7c.sh BIN_DIR HASH...
set -uo pipefail
SECONDS=0
bin=${1:-.devbin}
shift
final=${OUT:-out}
mkdir -p "$final"
out=/tmp/logs-s7c
mkdir -p "$out"
pack() { tar czf "$final/results.tgz" reports .prereg -C /tmp logs-s7c; }
chmod 600 .keys/signing.key
export PREREG_KEY=$PWD/.keys/signing.key PREREG_STORE=$PWD/.prereg
export PATH=/opt/torch/.venv/bin:$PATH PREREG_PYTHON=python3 PYTHONUNBUFFERED=1
S="$out/summary.txt"
step() { echo "== $* ($(date +%T), ${SECONDS}s)" | tee -a "$S"; }
left() { echo $(( ${BUDGET:-570} - SECONDS )); }
"$bin/prereg" --version | tee -a "$S"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$S"
new='fused norms:*'

# Exploratory protocols, written here (exploratory/ is git-ignored and does not travel).
mkdir -p exploratory
wide() { # name operation dtype rows cols passes arms...
  local name=$1 op=$2 dt=$3 rows=$4 cols=$5 passes=$6
  shift 6
  {
    printf 'prereg: 2\nid: %s\ntitle: "Session 7 fused kernels: %s %s (exploratory)"\n' "$name" "$op" "$dt"
    printf 'hypothesis: "exploratory"\ndevice: cuda\noperation: %s\ndtype: %s\n' "$op" "$dt"
    printf 'axes:\n  rows: [%s]\n  cols: [%s]\npasses: [%s]\narms:\n' "$rows" "$cols" "$passes"
    for a in "$@"; do printf '  - id: %s\n    kernel: %s.%s\n' "$a" "$op" "$a"; done
    printf 'measurement:\n  repetitions: 20\n  warmup: 3\npredictions:\n'
    printf '  - id: X\n    claim: "exploratory"\n    expect: "fused > 0"\n'
  } >"exploratory/$name.yaml"
}
wide wide_ln_bf16 layernorm bf16 256 "16384, 65536" "fwd, fwd+bwd" fused
wide wide_rms_fp32 rmsnorm fp32 256 "16384, 65536" "fwd, fwd+bwd" fused
wide wide_ln_bf16_big layernorm bf16 "4096, 65536" 1024 "fwd, fwd+bwd" fused unfused
wide wide_ln_bf16_8192 layernorm bf16 4096 8192 "fwd, fwd+bwd" fused unfused

step "GPU tests"
timeout 200 "$bin/prereg_device_tests" --duration=true >"$out/device_tests.log" 2>&1
tests=$?
echo "device_tests rc=$tests" | tee -a "$S"; tail -n 3 "$out/device_tests.log" | tee -a "$S"
grep -E "^(TEST CASE|.*ERROR|.*FAILED)" "$out/device_tests.log" | head -n 20 | tee -a "$S"
pack

if [ "$tests" -eq 0 ]; then
  for h in "$@"; do
    step "run $h (frozen)"
    timeout "$(( $(left) > 60 ? ($(left) - 60 < 220 ? $(left) - 60 : 220) : 5 ))" \
      "$bin/prereg" run "$h" --out reports --quiet >"$out/run_$h.out" 2>"$out/run_$h.err"
    echo "run rc=$?" | tee -a "$S"; tail -n 2 "$out/run_$h.err" | tee -a "$S"
    dir=$(tail -n 1 "$out/run_$h.out")
    if [ -n "$dir" ] && [ -d "$dir" ]; then
      "$bin/prereg" audit "$dir" >"$out/audit_$h.txt" 2>&1
      echo "audit rc=$? $dir" | tee -a "$S"
      grep -E '^\| `G[0-9a-z]*`' "$dir/report.md" | tee -a "$S"
    fi
    pack
  done
else
  echo "GPU tests failed: the frozen protocols are not run" | tee -a "$S"
fi

step "memcheck: the new fused-norm cases"
timeout "$(( $(left) > 100 ? 100 : 10 ))" compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$bin/prereg_device_tests" --test-case="$new" >"$out/memcheck.log" 2>&1
echo "memcheck rc=$?" | tee -a "$S"; tail -n 4 "$out/memcheck.log" | tee -a "$S"
pack
step "racecheck: the new fused-norm cases"
timeout "$(( $(left) > 90 ? 90 : 10 ))" compute-sanitizer --tool racecheck --error-exitcode 9 \
  "$bin/prereg_device_tests" --test-case="$new" >"$out/racecheck.log" 2>&1
echo "racecheck rc=$?" | tee -a "$S"; tail -n 4 "$out/racecheck.log" | tee -a "$S"
pack

step "plain python3: pybench after prereg's pre-window host work"
timeout "$(( $(left) > 60 ? 60 : 5 ))" python3 tools/host_probe.py micro "$out/plain_micro.json" >"$out/plain_micro.out" 2>&1
echo "rc=$?" | tee -a "$S"; tail -n 8 "$out/plain_micro.out" | tee -a "$S"
step "prereg try micro"
timeout "$(( $(left) > 50 ? 50 : 5 ))" env PREREG_PROBE_LOG="$out/probe_micro_prereg.json" "$bin/prereg" try \
  tools/probes/micro_gpu.yaml --quiet --out /tmp/try-micro >"$out/try_micro.out" 2>&1
echo "rc=$?" | tee -a "$S"
pack

step "exploratory: wide rows and 16-bit shapes, kernel clock on"
for y in exploratory/wide_*.yaml; do
  [ "$(left)" -gt 40 ] || break
  n=$(basename "$y" .yaml)
  timeout "$(( $(left) - 20 < 90 ? $(left) - 20 : 90 ))" "$bin/prereg" try "$y" --quiet --out /tmp/try-$n >"$out/try_$n.out" 2>&1
  echo "try $n rc=$?" | tee -a "$S"
  r=$(ls -d /tmp/try-$n/*/*/ 2>/dev/null | head -n 1); [ -n "$r" ] && cp "$r/report.json" "$out/try_${n}_report.json"
  pack
done
echo "== done (${SECONDS}s)" | tee -a "$S"
pack
