# Shared helpers of tools/device/run.sh (sourced, not run): errors, the time budget, logging,
# the results tarball, and one function per plan verb (dp_do_VERB). The plan format is in
# tools/device/README.md.
#
# Globals set by run.sh before the helpers are used:
#   DP_ROOT      the repository root (the working directory of every step)
#   DP_BIN       the folder of the carried binaries (prereg, prereg_device_tests)
#   DP_OUT       the folder that comes back ($OUT): results.tgz and summary.txt only
#   DP_LOGS      $DP_ROOT/device-logs (git-ignored): every log, written as it goes
#   DP_SCRATCH   a temporary folder for exploratory reports
#   DP_BUDGET    seconds for the whole plan (bash's SECONDS counts from the start)
#   DP_NSTEPS    the number of steps
# Per step: DP_N (the step number, two digits), DP_LIM (its time limit in seconds), DP_ARGS
# (its arguments, {logs} already replaced), DP_ENV (its NAME=VALUE settings); each dp_do_VERB
# sets DP_RC.

# shellcheck disable=SC2034 # used by run.sh
DP_RESERVE=15 # seconds kept back from every step for the last tarball

dp_die() { echo "device-plan: error: $*" >&2; exit 2; }

# ---- the budget ---------------------------------------------------------------------------------
dp_left() { echo $((DP_BUDGET - SECONDS)); }

# ---- logging ------------------------------------------------------------------------------------
dp_say() { echo "$*" | tee -a "$DP_LOGS/summary.txt"; }
dp_step() { dp_say "== [$1/$DP_NSTEPS] $2 ($(date +%T), ${SECONDS}s of ${DP_BUDGET}s)"; }
dp_tail() { # FILE N: the file's last N lines into the summary, indented
  [ -f "$1" ] || return 0
  tail -n "$2" "$1" | sed 's/^/   /' | tee -a "$DP_LOGS/summary.txt"
}
dp_verdicts() { # REPORT_DIR: the predictions' verdict rows of its report.md
  [ -f "$1/report.md" ] || return 0
  # shellcheck disable=SC2016 # the backquotes are Markdown
  grep -E '^\| `[A-Za-z][A-Za-z0-9_]*`' "$1/report.md" | sed 's/^/   /' | tee -a "$DP_LOGS/summary.txt"
}

# The machine, the binary and the code in its fat binary (nothing here changes a setting).
dp_env_header() {
  {
    echo "plan $DP_PLAN_SHOWN: $DP_NSTEPS steps, budget ${DP_BUDGET}s, started $(date -u +%FT%TZ)"
    if [ -x "$DP_BIN/prereg" ]; then
      "$DP_BIN/prereg" --version
      "$DP_BIN/prereg" devices cuda
    fi
    if command -v nvidia-smi >/dev/null 2>&1; then
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,memory.used \
        --format=csv
    fi
    echo "python3: $(command -v python3 || echo none)"
  } 2>&1 | tee -a "$DP_LOGS/summary.txt"
  if [ -x "$DP_BIN/prereg" ] && command -v cuobjdump >/dev/null 2>&1; then
    { cuobjdump --list-elf "$DP_BIN/prereg"; cuobjdump --list-ptx "$DP_BIN/prereg"; } >"$DP_LOGS/cuobjdump.txt" 2>&1
    sed -n 's/.*\.\(sm_[0-9a-z]*\)\.\(cubin\|ptx\).*/\1 \2/p' "$DP_LOGS/cuobjdump.txt" | sort | uniq -c |
      sed 's/^ */fat binary: /' | tee -a "$DP_LOGS/summary.txt"
  fi
}

# ---- what comes back ----------------------------------------------------------------------------
# $OUT/results.tgz, rewritten after every step (a call cut off at its limit still returns what
# was done): device-logs/, the new report folders under reports/ and, when the plan has run
# steps, the committed store .prereg/ (its ledger records the runs). Unpack it at the repository
# root: `tar xzf results.tgz`. $OUT/summary.txt is the summary alone.
dp_pack() {
  local items=(device-logs)
  [ "${DP_HAS_RUN:-0}" = 1 ] && items+=(.prereg)
  items+=("${DP_NEW_REPORTS[@]}")
  tar czf "$DP_OUT/results.tgz.part" -C "$DP_ROOT" "${items[@]}" 2>>"$DP_LOGS/pack.err" &&
    mv -f "$DP_OUT/results.tgz.part" "$DP_OUT/results.tgz"
  cp -f "$DP_LOGS/summary.txt" "$DP_OUT/summary.txt" 2>/dev/null
  return 0
}

# ---- running a step -----------------------------------------------------------------------------
# dp_timeout [NAME=VALUE...] CMD...: CMD under the step's limit, with the given settings and then
# the step's own env= settings.
dp_timeout() {
  local pre=()
  while [ $# -gt 0 ] && [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do pre+=("$1"); shift; done
  timeout --kill-after=10 "$DP_LIM" env "${pre[@]}" "${DP_ENV[@]}" "$@"
}
dp_name() { local b; b=$(basename "$1"); echo "${b%.*}"; } # a file's name without its extension
dp_keep_report() { # OUT_DIR BASE: the (first) report folder under OUT_DIR -> BASE.report.{json,md}
  local d
  d=$(find "$1" -mindepth 2 -maxdepth 2 -type d 2>/dev/null | sort | head -n 1)
  [ -n "$d" ] || return 0
  cp "$d/report.json" "$2.report.json" 2>/dev/null
  cp "$d/report.md" "$2.report.md" 2>/dev/null
  dp_say "   report: device-logs/$(basename "$2").report.json"
}

# ---- the verbs ----------------------------------------------------------------------------------
dp_do_tests() { # [DOCTEST ARGS...]
  local log="$DP_LOGS/$DP_N-tests.log"
  dp_timeout "$DP_BIN/prereg_device_tests" --duration=true "${DP_ARGS[@]}" >"$log" 2>&1
  DP_RC=$?
  dp_tail "$log" 4
}

dp_do_sanitize() { # TOOL [DOCTEST ARGS...]
  local tool=${DP_ARGS[0]} log="$DP_LOGS/$DP_N-${DP_ARGS[0]}.log"
  dp_timeout compute-sanitizer --tool "$tool" --error-exitcode 9 "$DP_BIN/prereg_device_tests" \
    "${DP_ARGS[@]:1}" >"$log" 2>&1
  DP_RC=$?
  dp_tail "$log" 3
}

dp_do_run() { # HASH|PROTOCOL_FILE: a frozen run in the committed store, signed, then audited
  local target=${DP_ARGS[0]} hash base dir arc
  if [ -f "$target" ]; then
    hash=$("$DP_BIN/prereg" check "$target" 2>"$DP_LOGS/$DP_N-check.err" | tail -n 1)
    if ! [[ $hash =~ ^[0-9a-f]{8,64}$ ]]; then
      dp_say "   prereg check $target gave no hash"
      dp_tail "$DP_LOGS/$DP_N-check.err" 3
      DP_RC=2
      return
    fi
  else
    hash=$target
  fi
  base="$DP_LOGS/$DP_N-run-${hash:0:12}"
  dp_timeout "$DP_BIN/prereg" run "$hash" --out reports --quiet >"$base.out" 2>"$base.err"
  DP_RC=$?
  dp_tail "$base.err" 3
  dir=$(tail -n 1 "$base.out" 2>/dev/null)
  dir=${dir%/}
  dir=${dir#"$DP_ROOT"/}
  if [ -n "$dir" ] && [ -d "$dir" ]; then
    DP_NEW_REPORTS+=("$dir")
    "$DP_BIN/prereg" audit "$dir" >"$base.audit.txt" 2>&1
    arc=$?
    dp_say "   report $dir: audit rc=$arc"
    [ "$DP_RC" -eq 0 ] && [ "$arc" -ne 0 ] && DP_RC=1
    dp_verdicts "$dir"
  fi
}

dp_do_try() { # FILE: an exploratory run (not frozen, not signed, not in the ledger)
  local file=${DP_ARGS[0]} base
  base="$DP_LOGS/$DP_N-try-$(dp_name "$file")"
  dp_timeout "$DP_BIN/prereg" try "$file" --quiet --out "$DP_SCRATCH/$DP_N-try" >"$base.out" 2>"$base.err"
  DP_RC=$?
  dp_tail "$base.err" 2
  dp_keep_report "$DP_SCRATCH/$DP_N-try" "$base"
}

dp_do_ncu() { # FILE [NCU ARGS...]: `prereg try FILE` under Nsight Compute, clocks untouched
  local file=${DP_ARGS[0]} extra=("${DP_ARGS[@]:1}") base
  [ ${#extra[@]} -gt 0 ] || extra=(--cache-control all --metrics gpu__time_duration.sum --page raw)
  base="$DP_LOGS/$DP_N-ncu-$(dp_name "$file")"
  dp_timeout PREREG_WINDOW_MARKS=1 ncu --clock-control none --target-processes all --csv \
    --log-file "$base.csv" "${extra[@]}" \
    "$DP_BIN/prereg" try "$file" --quiet --out "$DP_SCRATCH/$DP_N-ncu" >"$base.out" 2>&1
  DP_RC=$?
  dp_tail "$base.out" 3
  [ -f "$base.csv" ] && dp_say "   device-logs/$(basename "$base.csv"): $(wc -l <"$base.csv") lines"
  dp_keep_report "$DP_SCRATCH/$DP_N-ncu" "$base"
}

dp_do_main_job() { # the README's main job (tools/main-job.sh), in a store and key of its own
  local base="$DP_LOGS/$DP_N-main-job" mj="$DP_LOGS/main-job" dir arc
  mkdir -p "$mj"
  dp_timeout PREREG="$DP_BIN/prereg" MAIN_JOB_STORE="$mj/store" MAIN_JOB_OUT="$mj/reports" \
    PREREG_KEY="$mj/signing.key" bash tools/main-job.sh --quiet >"$base.out" 2>"$base.err"
  DP_RC=$?
  dp_tail "$base.err" 3
  dir=$(tail -n 1 "$base.out" 2>/dev/null)
  if [ -n "$dir" ] && [ -d "$dir" ]; then
    PREREG_STORE="$mj/store" "$DP_BIN/prereg" audit "$dir" >"$base.audit.txt" 2>&1
    arc=$?
    dp_say "   report ${dir#"$DP_ROOT"/}: audit rc=$arc"
    [ "$DP_RC" -eq 0 ] && [ "$arc" -ne 0 ] && DP_RC=1
    dp_verdicts "$dir"
  fi
}

dp_do_grade() { # SCRIPT [ARGS...]: a grading in the committed store, its leaderboard audited
  local file=${DP_ARGS[0]} log dir arc line
  log="$DP_LOGS/$DP_N-grade-$(dp_name "$file").log"
  dp_timeout PREREG="$DP_BIN/prereg" PATH="$DP_BIN:$PATH" bash "$file" "${DP_ARGS[@]:1}" \
    >"$log.out" 2>"$log"
  DP_RC=$?
  dp_tail "$log" 6
  while IFS= read -r line; do # every folder it names comes back; the leaderboard is audited
    dir=${line%/}
    dir=${dir#"$DP_ROOT"/}
    [ -n "$dir" ] && [ -d "$dir" ] || continue
    DP_NEW_REPORTS+=("$dir")
    [ -f "$dir/leaderboard.json" ] || continue
    cp "$dir/leaderboard.json" "$dir/leaderboard.md" "$DP_LOGS/" 2>/dev/null
    "$DP_BIN/prereg" audit "$dir" >"$log.audit.txt" 2>&1
    arc=$?
    dp_say "   leaderboard $dir: audit rc=$arc"
    [ "$DP_RC" -eq 0 ] && [ "$arc" -ne 0 ] && DP_RC=1
  done <"$log.out"
}

dp_do_python() { # FILE [ARGS...]: a device-side helper, in the venv's python3 when there is one
  local file=${DP_ARGS[0]} log
  log="$DP_LOGS/$DP_N-python-$(dp_name "$file").log"
  dp_timeout python3 "$file" "${DP_ARGS[@]:1}" >"$log" 2>&1
  DP_RC=$?
  dp_tail "$log" 6
}
