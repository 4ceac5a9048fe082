# tools/device/run.sh --dry-run: every shipped plan checks; a bad plan is refused before anything
# runs, with one line `device-plan: error: WHAT (FILE:LINE)` and exit 2. No GPU needed.
export PREREG=${PREREG:-unused} # lib.bash wants it; nothing here runs prereg
source "$(dirname "$0")/lib.bash"
runner=$PREREG_SOURCE_DIR/tools/device/run.sh
cd "$PREREG_SOURCE_DIR" || exit 1

had_logs=no
[ -e device-logs ] && had_logs=yes
shopt -s nullglob
plans=(tools/device/plans/*.plan)
[ ${#plans[@]} -ge 1 ] && pass "${#plans[@]} shipped plans" || fail "no plans in tools/device/plans"
for p in "${plans[@]}"; do
  expect_exit 0 "dry run of $p" -- bash "$runner" --dry-run "$p"
  head -n 1 "$work/out" | grep -qE "^device-plan: $p: [0-9]+ steps, budget [0-9]+s" &&
    pass "$p: the steps are listed" || fail "$p: $(head -n 1 "$work/out")"
done
expect_exit 0 "tools/device_run.sh --dry-run (the default plan)" -- bash tools/device_run.sh --dry-run
grep -q "plans/default.plan: " "$work/out" && pass "device_run.sh runs the default plan" || fail "device_run.sh"
if [ "$had_logs" = no ]; then
  [ ! -e device-logs ] && pass "a dry run writes no logs" || fail "a dry run made device-logs/"
fi

# bad PLAN_TEXT EXPECTED_ERROR: a plan refused with exactly this line on stderr, nothing on stdout
bad() {
  local plan="$work/bad.plan"
  printf '%s\n' "$1" >"$plan"
  expect_exit 2 "refused: $2" -- bash "$runner" --dry-run "$plan"
  local want="device-plan: error: $2"
  [ "$(cat "$work/err")" = "$want" ] && [ ! -s "$work/out" ] && pass "the one line: $want" ||
    fail "wanted '$want', got '$(cat "$work/err")' and stdout '$(head -c 200 "$work/out")'"
}
bad "tests
frobnicate now" "unknown verb 'frobnicate' ($work/bad.plan:2)"
bad "# frozen runs
run" "run: missing HASH ($work/bad.plan:2)"
bad "run need=60    # the hash went missing" "run: missing HASH ($work/bad.plan:1)"
bad "try exploratory/no_such_protocol.yaml" "try: no such file: exploratory/no_such_protocol.yaml ($work/bad.plan:1)"
bad "ncu tools/device/probes/missing.yaml --page raw" "ncu: no such file: tools/device/probes/missing.yaml ($work/bad.plan:1)"
bad "run 0123456789abcdef0123" "run: no protocol 0123456789abcdef0123 is frozen in .prereg ($work/bad.plan:1)"
bad "run protocol-id" "run: not a protocol hash (8 to 64 hex digits) or a protocol file: protocol-id ($work/bad.plan:1)"
bad "sanitize helgrind" "sanitize: unknown tool 'helgrind' (memcheck, racecheck, initcheck or synccheck) ($work/bad.plan:1)"
bad "tests limit=soon" "limit: not a number of seconds: soon ($work/bad.plan:1)"
bad "sanitize memcheck limit=100" "sanitize: limit= goes right after the verb: limit=100 ($work/bad.plan:1)"
bad "ncu tools/device/probes/micro_gpu.yaml --clock-control base" "ncu: --clock-control is set by the runner ($work/bad.plan:1)"
bad "tests --test-case=\"every CUDA arm*" "unterminated quote (\") ($work/bad.plan:1)"
bad "# nothing but comments" "the plan has no steps ($work/bad.plan)"

# A line ending in a backslash goes on; the step is named by its first line.
printf 'tests \\\n  --test-case="a b*"\n\nmain-job\n' >"$work/cont.plan"
expect_exit 0 "continued line" -- bash "$runner" --dry-run "$work/cont.plan"
grep -qF '1  tests need=30 "--test-case=a b*"  (line 1)' "$work/out" &&
  grep -qF '2  main-job need=30  (line 4)' "$work/out" && pass "two steps, quotes kept" ||
  fail "continued line: $(cat "$work/out")"

expect_exit 2 "no plan file" -- bash "$runner" --dry-run "$work/none.plan"
[ "$(cat "$work/err")" = "device-plan: error: cannot read plan file $work/none.plan" ] &&
  pass "a missing plan file is named" || fail "missing plan: $(cat "$work/err")"
finish
