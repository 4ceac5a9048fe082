#!/usr/bin/env bash
# Session 8 device calls (issue 15, goals 3-5): run frozen benchmark protocols one after the
# other, signed with the carried project key and audited, packing results after each; a
# protocol starts only while at least MIN_LEFT seconds of BUDGET remain (a run is never killed
# half-way on purpose). Then, if NCU=1 and time remains, Nsight Compute's speed-of-light and
# occupancy sections over exploratory copies of the cells named in tools/ncu_s8.txt.
# A device call runs on a copy of this tree: its runs extend the copy's .prereg ledger. Unpack
# each call's results.tgz and commit its ledger before the next call, or the next call's ledger
# forks from the same head (session 8's three calls did: docs/evidence/issue15-s8/README.md).
# Usage: BUDGET=SECONDS [MIN_LEFT=S] [NCU=1] bash tools/device_s8.sh BIN_DIR TAG HASH...
set -uo pipefail
SECONDS=0
bin=${1:-.devbin}
tag=${2:-s8}
shift 2
final=${OUT:-out}
out=/tmp/logs-$tag
mkdir -p "$final" "$out"
pack() { tar czf "$final/results.tgz" reports .prereg -C /tmp "logs-$tag"; }
chmod 600 .keys/signing.key
export PREREG_KEY=$PWD/.keys/signing.key PREREG_STORE=$PWD/.prereg
export PATH=/opt/torch/.venv/bin:$PATH PREREG_PYTHON=python3 PYTHONUNBUFFERED=1
S="$out/summary.txt"
step() { echo "== $* ($(date +%T), ${SECONDS}s)" | tee -a "$S"; }
left() { echo $(( ${BUDGET:-560} - SECONDS )); }
"$bin/prereg" --version | tee -a "$S"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$S"
for h in "$@"; do
  if [ "$(left)" -lt "${MIN_LEFT:-100}" ]; then
    echo "not started (budget): $h" | tee -a "$S"
    continue
  fi
  step "run $h (frozen)"
  t0=$SECONDS
  timeout "$(( $(left) - 10 ))" "$bin/prereg" run "$h" --out reports --quiet >"$out/run_$h.out" 2>"$out/run_$h.err"
  echo "run rc=$? $((SECONDS - t0))s" | tee -a "$S"
  tail -n 2 "$out/run_$h.err" | tee -a "$S"
  dir=$(tail -n 1 "$out/run_$h.out")
  if [ -n "$dir" ] && [ -d "$dir" ]; then
    "$bin/prereg" audit "$dir" >"$out/audit_$h.txt" 2>&1
    echo "audit rc=$? $dir" | tee -a "$S"
    grep -E '^\| `G[0-9a-z]*`' "$dir/report.md" | tee -a "$S"
  fi
  pack
done
if [ "${NCU:-0}" = 1 ] && [ -f tools/ncu_s8.txt ]; then
  while read -r name yaml; do
    case $name in ''|'#'*) continue ;; esac
    [ "$(left)" -gt 45 ] || break
    step "ncu $name"
    timeout "$(( $(left) - 15 < 120 ? $(left) - 15 : 120 ))" ncu --clock-control none --cache-control all \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
      -k "regex:ln_|rms_|triton|layer_norm|reduce_partials" -c 40 --target-processes all --csv --page details --log-file "$out/ncu_$name.csv" \
      "$bin/prereg" try "$yaml" --quiet --out "/tmp/ncu-$name" >"$out/ncu_$name.out" 2>&1
    echo "ncu rc=$?" | tee -a "$S"
    pack
  done <tools/ncu_s8.txt
fi
echo "== done (${SECONDS}s)" | tee -a "$S"
pack
