#!/usr/bin/env bash
# Runs each fuzzer in turn for SECONDS (default 600) on one core, growing a working corpus in
# build-fuzz/corpus/NAME from the committed seeds in fuzz/corpus/NAME; logs go to
# build-fuzz/logs/NAME.log and crashes to build-fuzz/crashes/NAME/. Usage:
#   fuzz/run_fuzzers.sh [SECONDS] [NAME...]      (NAME: json protocol expr audit)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(json protocol expr audit)
declare -A max_len=([json]=65536 [protocol]=16384 [expr]=2048 [audit]=65536)
declare -A dict=([protocol]=fuzz/protocol.dict [expr]=fuzz/expr.dict)
rc=0
for name in "${names[@]}"; do
  bin=build-fuzz/fuzz/fuzz_$name
  mkdir -p "build-fuzz/corpus/$name" "build-fuzz/crashes/$name" build-fuzz/logs
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len="${max_len[$name]}"
        -print_final_stats=1 -artifact_prefix="build-fuzz/crashes/$name/")
  [ -n "${dict[$name]:-}" ] && args+=(-dict="${dict[$name]}")
  echo "== fuzz_$name for ${seconds}s"
  "$bin" "${args[@]}" "build-fuzz/corpus/$name" "fuzz/corpus/$name" >"build-fuzz/logs/$name.log" 2>&1
  status=$?
  grep -E "^Done [0-9]+ runs|^stat::number_of_executed_units|ERROR|SUMMARY" "build-fuzz/logs/$name.log" | head -5
  [ $status -ne 0 ] && { echo "fuzz_$name exited $status: see build-fuzz/logs/$name.log"; rc=1; }
done
exit $rc
