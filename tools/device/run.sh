#!/usr/bin/env bash
# One device call, driven by a plan file (format: tools/device/README.md): the GPU tests,
# compute-sanitizer, frozen runs in the committed store, exploratory tries, Nsight Compute over
# a try, the main job and device-side Python helpers, within a time budget. Logs go to
# ./device-logs as they are written; $OUT/results.tgz and $OUT/summary.txt after every step.
#   usage: tools/device/run.sh [--dry-run] [--bin DIR] PLAN_FILE
#   --dry-run   check the plan and print its steps; nothing runs (no GPU or binary needed)
#   --bin DIR   the carried binaries prereg and prereg_device_tests ($BIN, else .devbin)
# Exit: 0 every step ran and passed; 1 a step failed or was not started; 2 a bad plan or usage.
set -uo pipefail
DP_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DP_ROOT=$(cd "$DP_HERE/../.." && pwd)
# shellcheck source=tools/device/lib.bash
source "$DP_HERE/lib.bash"

usage="usage: tools/device/run.sh [--dry-run] [--bin DIR] PLAN_FILE"
dry=0
bin=${BIN:-.devbin}
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry=1 ;;
    --bin) [ $# -ge 2 ] || dp_die "--bin needs a folder ($usage)"; bin=$2; shift ;;
    --bin=*) bin=${1#--bin=} ;;
    -h | --help) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) dp_die "unknown option $1 ($usage)" ;;
    *) break ;;
  esac
  shift
done
[ $# -eq 1 ] || dp_die "one PLAN_FILE expected ($usage)"
DP_PLAN_SHOWN=$1
if ! [ -f "$1" ] || ! [ -r "$1" ]; then dp_die "cannot read plan file $1"; fi
plan_abs=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[[ $bin == /* ]] || bin=$PWD/$bin
DP_BIN=$bin
cd "$DP_ROOT" || exit 2 # every path in a plan is relative to the repository root

# ---- the plan -----------------------------------------------------------------------------------
# One step a line: VERB [OPTION...] ARG...; '#' starts a comment; arguments are split on blanks,
# '...' and "..." group (no escapes, no expansion).
DP_VERBS="tests sanitize run try ncu main-job python grade budget"
DP_AT=""
plan_error() { dp_die "$1 ($DP_PLAN_SHOWN:$DP_AT)"; }

TOK=()
tokens() { # LINE -> TOK; a bad line is a plan error
  local s=$1 n=${#1} i=0 c tok="" have=0 q=""
  TOK=()
  while [ $i -lt "$n" ]; do
    c=${s:i:1}
    if [ -n "$q" ]; then
      if [ "$c" = "$q" ]; then q=""; else tok+=$c; fi
    else
      case $c in
        ' ' | $'\t')
          if [ $have = 1 ]; then TOK+=("$tok"); tok=""; have=0; fi ;;
        "'" | '"') q=$c; have=1 ;;
        '#') if [ $have = 0 ]; then break; fi; tok+=$c ;;
        *) tok+=$c; have=1 ;;
      esac
    fi
    i=$((i + 1))
  done
  [ -z "$q" ] || plan_error "unterminated quote ($q)"
  if [ $have = 1 ]; then TOK+=("$tok"); fi
  local t
  for t in "${TOK[@]}"; do [ -n "$t" ] || plan_error "an empty argument"; done
}

seconds_arg() { # WHAT VALUE: a whole number of seconds, at least 1
  if ! [[ $2 =~ ^[0-9]{1,6}$ ]] || [ "$2" -lt 1 ]; then plan_error "$1: not a number of seconds: $2"; fi
}

needs_file() { # VERB WHAT FILE
  [ -f "$3" ] || plan_error "$1: no such file: $3"
}

# Steps, 1-based: verb, line, limit (0: what the budget leaves), need, and the arguments and
# env settings as slices of two flat arrays.
DP_NSTEPS=0
S_VERB=() S_LINE=() S_LIMIT=() S_NEED=() S_AOFF=() S_ACNT=() S_EOFF=() S_ECNT=()
ALL_ARGS=() ALL_ENV=()
plan_budget="" plan_budget_line=0
declare -A first_line_of # verb -> the first line that uses it (for the checks before a real run)

add_step() { # TEXT LINE: one step (or directive) of the plan
  local verb args limit need envs kv nargs t frozen a i
  DP_AT=$2
  tokens "$1"
  [ ${#TOK[@]} -gt 0 ] || return 0
  verb=${TOK[0]}
  args=("${TOK[@]:1}")
  [[ " $DP_VERBS " == *" $verb "* ]] || plan_error "unknown verb '$verb'"
  if [ "$verb" = budget ]; then
    [ -z "$plan_budget" ] || plan_error "budget: given twice (first on line $plan_budget_line)"
    [ ${#args[@]} -eq 1 ] || plan_error "budget: one number of seconds expected"
    seconds_arg budget "${args[0]}"
    plan_budget=${args[0]} plan_budget_line=$2
    return 0
  fi
  limit=0 need="" envs=()
  while [ ${#args[@]} -gt 0 ]; do
    case ${args[0]} in
      limit=*) seconds_arg limit "${args[0]#limit=}"; limit=${args[0]#limit=} ;;
      need=*) seconds_arg need "${args[0]#need=}"; need=${args[0]#need=} ;;
      env=*)
        kv=${args[0]#env=}
        [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || plan_error "env: NAME=VALUE expected: ${args[0]}"
        case ${kv%%=*} in
          PREREG_STORE | PREREG_KEY | PATH) plan_error "env: ${kv%%=*} is set by the runner" ;;
        esac
        envs+=("$kv") ;;
      *) break ;;
    esac
    args=("${args[@]:1}")
  done
  nargs=${#args[@]}
  for a in "${args[@]}"; do
    if [[ $a =~ ^(limit|need|env)= ]]; then plan_error "$verb: ${a%%=*}= goes right after the verb: $a"; fi
  done
  case $verb in
    tests) ;;
    sanitize)
      [ "$nargs" -ge 1 ] || plan_error "sanitize: missing TOOL (memcheck or racecheck)"
      case ${args[0]} in
        memcheck | racecheck | initcheck | synccheck) ;;
        *) plan_error "sanitize: unknown tool '${args[0]}' (memcheck, racecheck, initcheck or synccheck)" ;;
      esac ;;
    run)
      [ "$nargs" -ge 1 ] || plan_error "run: missing HASH"
      [ "$nargs" -eq 1 ] || plan_error "run: one HASH only, then nothing: ${args[1]}"
      t=${args[0]}
      if [[ $t =~ ^[0-9a-f]{8,64}$ ]]; then
        shopt -s nullglob
        frozen=(.prereg/protocols/"$t"*/)
        shopt -u nullglob
        [ ${#frozen[@]} -ge 1 ] || plan_error "run: no protocol $t is frozen in .prereg"
        [ ${#frozen[@]} -eq 1 ] || plan_error "run: $t names ${#frozen[@]} frozen protocols"
      elif [[ $t == *.yaml || $t == *.yml ]]; then
        needs_file run "protocol file" "$t"
      else
        plan_error "run: not a protocol hash (8 to 64 hex digits) or a protocol file: $t"
      fi ;;
    try | ncu | python | grade)
      [ "$nargs" -ge 1 ] || plan_error "$verb: missing FILE"
      needs_file "$verb" file "${args[0]}"
      if [ "$verb" = try ] && [ "$nargs" -gt 1 ]; then plan_error "try: one FILE only, then nothing: ${args[1]}"; fi
      if [ "$verb" = ncu ]; then
        for a in "${args[@]:1}"; do
          case $a in
            --log-file* | --clock-control* | --target-processes* | --csv | --export* | -o)
              plan_error "ncu: ${a%%=*} is set by the runner" ;;
          esac
        done
      fi ;;
    main-job) [ "$nargs" -eq 0 ] || plan_error "main-job: takes no arguments: ${args[0]}" ;;
  esac
  if [ -z "$need" ]; then
    need=30
    [ "$verb" = run ] && need=120 # a frozen run cut off is recorded as aborted: start it with room
    [ "$verb" = grade ] && need=120
  fi
  DP_NSTEPS=$((DP_NSTEPS + 1))
  i=$DP_NSTEPS
  S_VERB[i]=$verb S_LINE[i]=$2 S_LIMIT[i]=$limit S_NEED[i]=$need
  S_AOFF[i]=${#ALL_ARGS[@]} S_ACNT[i]=$nargs S_EOFF[i]=${#ALL_ENV[@]} S_ECNT[i]=${#envs[@]}
  ALL_ARGS+=("${args[@]}")
  ALL_ENV+=("${envs[@]}")
  [ -n "${first_line_of[$verb]:-}" ] || first_line_of[$verb]=$2
}

# A line ending in a backslash goes on on the next one (its step is named by its first line).
lineno=0 text="" first=0
while IFS= read -r line || [ -n "$line" ]; do
  lineno=$((lineno + 1))
  line=${line%$'\r'}
  [ -n "$text" ] || first=$lineno
  if [[ $line == *\\ ]]; then
    text+="${line%\\} "
    continue
  fi
  add_step "$text$line" "$first"
  text=""
done <"$plan_abs"
[ -z "$text" ] || add_step "$text" "$first"
[ "$DP_NSTEPS" -gt 0 ] || dp_die "the plan has no steps ($DP_PLAN_SHOWN)"

if [ -n "${BUDGET:-}" ]; then
  if ! [[ $BUDGET =~ ^[0-9]{1,6}$ ]] || [ "$BUDGET" -lt 1 ]; then dp_die "BUDGET: not a number of seconds: $BUDGET"; fi
  DP_BUDGET=$BUDGET budget_from="BUDGET"
elif [ -n "$plan_budget" ]; then
  DP_BUDGET=$plan_budget budget_from="the plan"
else
  DP_BUDGET=560 budget_from="default"
fi

show() { # ARGS...: one line, an argument with a blank or a quote in quotes
  local out="" a
  for a in "$@"; do
    if [[ $a == *[[:space:]\'\"]* ]]; then
      if [[ $a == *\"* ]]; then a="'$a'"; else a="\"$a\""; fi
    fi
    out+=" $a"
  done
  echo "${out# }"
}
step_text() { # I: the step as written, options first
  local i=$1 e
  local words=("${S_VERB[i]}")
  [ "${S_LIMIT[i]}" -gt 0 ] && words+=("limit=${S_LIMIT[i]}")
  words+=("need=${S_NEED[i]}")
  if [ "${S_ECNT[i]}" -gt 0 ]; then
    for e in "${ALL_ENV[@]:${S_EOFF[i]}:${S_ECNT[i]}}"; do words+=("env=$e"); done
  fi
  words+=("${ALL_ARGS[@]:${S_AOFF[i]}:${S_ACNT[i]}}")
  show "${words[@]}"
}

if [ "$dry" = 1 ]; then
  echo "device-plan: $DP_PLAN_SHOWN: $DP_NSTEPS steps, budget ${DP_BUDGET}s ($budget_from); dry run, nothing runs"
  for ((i = 1; i <= DP_NSTEPS; i++)); do
    printf '%3d  %s  (line %d)\n' "$i" "$(step_text "$i")" "${S_LINE[i]}"
  done
  exit 0
fi

# ---- before anything runs: the binaries, the key and the tools the plan needs ------------------
[ -d /opt/torch/.venv/bin ] && export PATH=/opt/torch/.venv/bin:$PATH # the device's torch venv
[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
export PREREG_PYTHON=${PREREG_PYTHON:-python3} PYTHONUNBUFFERED=1
uses() { [ -n "${first_line_of[$1]:-}" ]; }
pre_error() { DP_AT=${first_line_of[$1]}; plan_error "$2"; }
for v in run try ncu main-job grade; do
  uses "$v" && { [ -x "$DP_BIN/prereg" ] || pre_error "$v" "$v: $DP_BIN/prereg is missing (--bin DIR)"; }
done
for v in tests sanitize; do
  uses "$v" && { [ -x "$DP_BIN/prereg_device_tests" ] ||
    pre_error "$v" "$v: $DP_BIN/prereg_device_tests is missing (--bin DIR)"; }
done
uses sanitize && { command -v compute-sanitizer >/dev/null || pre_error sanitize "sanitize: compute-sanitizer is not on PATH"; }
uses ncu && { command -v ncu >/dev/null || pre_error ncu "ncu: ncu is not on PATH"; }
uses python && { command -v python3 >/dev/null || pre_error python "python: python3 is not on PATH"; }
DP_HAS_RUN=0
for v in run grade; do
  if uses "$v"; then
    [ -f .keys/signing.key ] || pre_error "$v" "$v: the project key .keys/signing.key is missing (carry it)"
    chmod 600 .keys/signing.key
    DP_HAS_RUN=1
  fi
done
export PREREG_STORE=$DP_ROOT/.prereg # the committed store; its ledger records every run
[ -f .keys/signing.key ] && export PREREG_KEY=$DP_ROOT/.keys/signing.key

# ---- the steps ----------------------------------------------------------------------------------
SECONDS=0
DP_OUT=${OUT:-$DP_ROOT/out/device-plan}
DP_LOGS=$DP_ROOT/device-logs
rm -rf "$DP_LOGS"
mkdir -p "$DP_LOGS" "$DP_OUT" || dp_die "cannot make $DP_LOGS or $DP_OUT"
DP_SCRATCH=$(mktemp -d /tmp/device-plan.XXXXXX)
trap 'rm -rf "$DP_SCRATCH"' EXIT
DP_NEW_REPORTS=()
cp "$plan_abs" "$DP_LOGS/plan.txt"
dp_env_header
dp_pack

passed=0 failed=0 skipped=0 bad_build=""
for ((i = 1; i <= DP_NSTEPS; i++)); do
  DP_N=$(printf '%02d' "$i")
  verb=${S_VERB[i]}
  DP_ARGS=("${ALL_ARGS[@]:${S_AOFF[i]}:${S_ACNT[i]}}")
  DP_ENV=("${ALL_ENV[@]:${S_EOFF[i]}:${S_ECNT[i]}}")
  DP_ARGS=("${DP_ARGS[@]//\{logs\}/$DP_LOGS}")
  DP_ENV=("${DP_ENV[@]//\{logs\}/$DP_LOGS}")
  avail=$(($(dp_left) - DP_RESERVE))
  if { [ "$verb" = run ] || [ "$verb" = grade ]; } && [ -n "$bad_build" ]; then
    dp_say "== [$i/$DP_NSTEPS] not started: $(step_text "$i"): $bad_build"
    skipped=$((skipped + 1))
    continue
  fi
  if [ "$avail" -lt "${S_NEED[i]}" ]; then
    dp_say "== [$i/$DP_NSTEPS] not started (budget: ${avail}s left, it needs ${S_NEED[i]}s): $(step_text "$i")"
    skipped=$((skipped + 1))
    continue
  fi
  DP_LIM=$avail
  [ "${S_LIMIT[i]}" -gt 0 ] && [ "${S_LIMIT[i]}" -lt "$avail" ] && DP_LIM=${S_LIMIT[i]}
  dp_step "$i" "$(step_text "$i") (limit ${DP_LIM}s)"
  t0=$SECONDS
  DP_RC=0
  "dp_do_${verb//-/_}"
  case $DP_RC in
    0) dp_say "   rc=0 ($((SECONDS - t0))s)"; passed=$((passed + 1)) ;;
    124 | 137) dp_say "   rc=$DP_RC: timed out after ${DP_LIM}s"; failed=$((failed + 1)) ;;
    *) dp_say "   rc=$DP_RC ($((SECONDS - t0))s)"; failed=$((failed + 1)) ;;
  esac
  if [ "$DP_RC" -ne 0 ]; then
    if [ "$verb" = tests ]; then bad_build="the GPU tests of step $i failed"; fi
    if [ "$verb" = sanitize ] && [ "$DP_RC" -eq 9 ]; then bad_build="compute-sanitizer found errors in step $i"; fi
  fi
  dp_pack
done
dp_say "device-plan: $DP_NSTEPS steps: $passed passed, $failed failed, $skipped not started (${SECONDS}s)"
dp_pack
[ $((failed + skipped)) -eq 0 ]
