# Shared by the attack cases (tests/attacks/README.md): sourced by each case's run.sh, which
# prereg's attack driver (tests/e2e/attacks.sh) runs with PREREG, WORK and SRC set. A case plants
# its attack, runs prereg, then calls the checks below; `verdict` exits 0 when every check held
# and 1 with one line naming the first escape that succeeded.
set -uo pipefail
: "${PREREG:?PREREG must name the built binary}" "${WORK:?WORK must name an empty folder}"
: "${SRC:?SRC must name the repository}"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
export PREREG_PYTHON=$py
# A home of the case's own: the default key folder (~/.config/prereg) and the default cache
# (~/.cache) are the user's real ones as prereg sees them.
export HOME=$WORK/home
unset XDG_CONFIG_HOME XDG_CACHE_HOME PREREG_KEY TMPDIR
P=$WORK/project # the project: protocols, arms, the store (.prereg), the reports
export PREREG_STORE=$P/.prereg
REPORTS=$P/reports
LOOT=$WORK/loot # the attackers' drop: outside everything prereg protects, so the case can read it
KEY=$HOME/.config/prereg/signing.key
escaped="" # the first escape that succeeded, in one line

mkdir -p "$P" "$LOOT" "$HOME" "$REPORTS"
chmod 0777 "$LOOT"

# escape WHAT: records that WHAT succeeded (the first one is the case's one line).
escape() { [ -n "$escaped" ] || escaped=$1; }

# collect_loot FILE: the attackers' `PREREG-LOOT NAME LINE` lines in FILE (their stderr, which
# prereg passes on) appended to $LOOT/NAME: the loot folder lies under /tmp, a scratch folder
# whose writes inside the sandbox vanish with it (docs/engine.md, "Scratch"), so an attacker
# also says what it got on stderr (escape.py's loot_line). NAME is a plain file name; a line the
# file holds already is not added again.
collect_loot() {
  local name line payload
  while IFS= read -r line; do
    name=${line#PREREG-LOOT }
    name=${name%% *}
    [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || continue
    payload=${line#PREREG-LOOT "$name" }
    # once: where the sandbox has no scratch space of its own the file holds the line already
    grep -qxF -- "$payload" "$LOOT/$name" 2>/dev/null || printf '%s\n' "$payload" >>"$LOOT/$name"
  done < <(grep -a '^PREREG-LOOT ' "$1" 2>/dev/null)
}

# run_prereg ARGS...: prereg with stdout and stderr kept in $WORK/out and $WORK/err (searched for
# key bytes), under a watchdog (a hang is an escape too); sets $rc.
run_prereg() {
  timeout -k 5 "${PREREG_ATTACK_WATCHDOG:-300}" "$PREREG" "$@" >"$WORK/out" 2>"$WORK/err"
  rc=$?
  cat "$WORK/out" >>"$WORK/all.out"
  cat "$WORK/err" >>"$WORK/all.out"
  collect_loot "$WORK/err"
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || escape "prereg $1 hung past the watchdog"
  if [ "$1" = run ] && [ "$rc" -eq 0 ]; then REPORT=$(tail -n 1 "$WORK/out"); fi
}
REPORT="" # the last run's report folder

# plant_key [PATH]: a fresh signing key at PATH (default: the default key path); sets KEY_BODY,
# the key's base64 body, searched for everywhere an attacker could leave it.
plant_key() {
  local path=${1:-$KEY}
  "$PREREG" keygen --key "$path" >/dev/null 2>&1 || { echo "cannot make a key at $path"; exit 2; }
  KEY_BODY=$(grep -v -- '-----' "$path" | tr -d '\n')
}

# attack_config KEY_PATH: attack.json beside the attackers, and the escape helpers.
attack_config() {
  cp "$SRC/tests/attacks/escape.py" "$P/"
  printf '{"key": "%s", "store": "%s", "reports": "%s", "project": "%s", "loot": "%s", "home": "%s"}\n' \
    "$1" "$PREREG_STORE" "$REPORTS" "$P" "$LOOT" "$HOME" >"$P/attack.json"
}

# protocol FILE ID ARMS_YAML [OPERATION]: a small CPU protocol with the built-in fused
# LayerNorm and the arms given (YAML lines under `arms:`), one shape, few repetitions, no cache
# flush before each sample (a flush of this machine's last-level cache took most of a case's
# time; no case is about cache state). Set
# MEASUREMENT_EXTRA (YAML lines under `measurement:`), CLAIM and EXPECT to change those parts.
protocol() {
  local file=$1 id=$2 arms=$3 op=${4:-layernorm}
  cat >"$file" <<EOF
prereg: 2
id: $id
title: an attack case of tests/attacks
hypothesis: the attacker is contained
device: cpu
operation: $op
dtype: fp32
axes:
  rows: [16]
  cols: [256]
passes: [fwd]
arms:
  - id: builtin
    kernel: layernorm.fused
$arms
measurement:
  repetitions: 3
  warmup: 1
  l2_flush: false${MEASUREMENT_EXTRA:+
$MEASUREMENT_EXTRA}
predictions:
  - id: P1
    claim: ${CLAIM:-the built-in arm takes under a second}
    expect: ${EXPECT:-time(builtin) < 1000}
EOF
}

# report_get PY_EXPR: PY_EXPR evaluated with r = the last run's report.json (empty if none).
report_get() {
  [ -f "$REPORT/report.json" ] || return 0
  "$py" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
    "$REPORT/report.json" "$1" 2>/dev/null
}

# check_not_confirmed ID: prediction ID of the last run is not confirmed (the attack's claim).
check_not_confirmed() {
  local v
  v=$(report_get "[p['verdict'] for p in r['predictions'] if p['id']=='$1'][0]")
  [ "$v" != confirmed ] || escape "the false prediction $1 was confirmed"
}

# check_judged: the last run's first prediction (the built-in arm's) was judged on its samples:
# confirmed, or inconclusive only because they were unstable (a case takes few samples, on a
# shared machine that runs other tests beside it).
check_judged() {
  [ "$(report_get "[p['verdict'] == 'confirmed' or (p['verdict'] == 'inconclusive' and 'unstable' in p.get('reason', '')) for p in r['predictions']][0]")" = True ] ||
    escape "the built-in arm's prediction was not judged: $(report_get "r['predictions']")"
}

# check_last_ledger_event EVENT: the ledger's last entry is EVENT (run-aborted, run-complete).
check_last_ledger_event() {
  local last
  last=$(tail -n 1 "$PREREG_STORE/ledger.jsonl" 2>/dev/null | "$py" -c 'import json,sys; print(json.loads(sys.stdin.read())["event"])' 2>/dev/null)
  [ "$last" = "$1" ] || escape "the ledger's last entry is '${last:-none}', not $1"
}

# check_no_key: the key's bytes are nowhere an attacker could leave them: the loot, prereg's
# output, the reports, the scratch folder.
check_no_key() {
  [ -n "${KEY_BODY:-}" ] || return 0
  local where
  where=$(grep -rlF -- "$KEY_BODY" "$LOOT" "$WORK/all.out" "$REPORTS" 2>/dev/null | head -n 1)
  [ -z "$where" ] || escape "the key's bytes reached ${where#"$WORK"/}"
  grep -rqs -- "PRIVATE KEY" "$LOOT" && escape "key material (a PEM private key) reached the loot"
  return 0
}

# check_loot_has MARKER: the attacker ran (its loot holds MARKER), so that a case that did not
# run its attack cannot pass.
check_loot_has() {
  grep -rqs -- "$1" "$LOOT" || escape "the attacker did not run (no '$1' in its loot): the case tested nothing"
}

# operation_protocol FILE ID: the protocol of an operation-file case at FILE (its folder holds the
# attacker's op.py): operation swiglu from op.py, measured by examples' numpy arm `eager`.
# MEASUREMENT_EXTRA as for `protocol`.
operation_protocol() {
  cp "$SRC/examples/operations/swiglu_numpy.py" "$(dirname "$1")/"
  cat >"$1" <<EOF2
prereg: 2
id: $2
title: an attack case of tests/attacks
hypothesis: the attacker is contained
device: cpu
operation: {python: op.py, name: swiglu}
dtype: fp32
axes:
  rows: [16]
  cols: [256]
passes: [fwd]
arms:
  - id: eager
    python: swiglu_numpy.py
    function: eager
measurement:
  repetitions: 3
  warmup: 1
  l2_flush: false${MEASUREMENT_EXTRA:+
$MEASUREMENT_EXTRA}
predictions:
  - id: P1
    claim: the eager arm takes under a second
    expect: time(eager) < 1000
EOF2
}

# check_no_process MARKER: no process whose command line holds MARKER is left (the attacker's
# daemons name themselves with it). Leftovers are ended by their pid.
check_no_process() {
  local pids="" p try
  # (the kernel ends a PID namespace's members as its init ends, not at once: up to 10 s)
  for try in $(seq 50); do
    pids=""
    for p in /proc/[0-9]*; do
      if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "$1"; then pids="$pids ${p#/proc/}"; fi
    done
    [ -n "$pids" ] || break
    sleep 0.2
  done
  if [ -n "$pids" ]; then
    escape "a process the attacker started outlived prereg (pid$pids)"
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
  fi
  return 0
}

# check_absent PATH...: none of these files exist (what an attacker tried to plant).
check_absent() {
  local f
  for f in "$@"; do [ ! -e "$f" ] || escape "the attacker wrote ${f#"$WORK"/}"; done
}

# check_no_store: nothing was stored (a `check` must store nothing).
check_no_store() {
  [ ! -e "$PREREG_STORE/ledger.jsonl" ] && [ -z "$(ls -A "$PREREG_STORE/protocols" 2>/dev/null)" ] \
    || escape "prereg check stored something ($(ls "$PREREG_STORE" | tr '\n' ' '))"
}

# check_loot_lacks PATTERN WHAT: the attacker's loot does not match PATTERN (grep -E); WHAT names
# the escape if it does.
check_loot_lacks() {
  if grep -rqsE -- "$1" "$LOOT"; then escape "$2"; fi
  return 0
}

# The bidirectional controls an attacker plants (U+202E, U+2066, U+2069, U+061C, U+202C), as
# UTF-8 bytes for grep -P under LC_ALL=C.
bidi_raw='\xe2\x80\xae|\xe2\x81\xa6|\xe2\x81\xa9|\xd8\x9c|\xe2\x80\xac'

# check_bidi_escaped: the last run's report.md and report.html and prereg's terminal output
# (without the loot lines) hold no raw bidirectional control, and both pages show the override
# escaped (\u202e).
check_bidi_escaped() {
  local page
  for page in "$REPORT/report.md" "$REPORT/report.html"; do
    [ -f "$page" ] || { escape "the run left no ${page##*/}"; continue; }
    LC_ALL=C grep -qP "$bidi_raw" "$page" && escape "a bidirectional control reached ${page##*/} raw"
    grep -qF 'u202e' "$page" || escape "${page##*/} does not show the override escaped (\\u202e)"
  done
  LC_ALL=C grep -v '^PREREG-LOOT ' "$WORK/out" "$WORK/err" | grep -qP "$bidi_raw" &&
    escape "a bidirectional control reached prereg's terminal output raw"
  return 0
}

# check_run_clean: after the case's last run, nothing is lost: its report audits clean, its
# isolation level is `sandboxed` where this machine gives user namespaces, and the ledger
# verifies. Called last, so that what the attack itself got through is the case's line.
check_run_clean() {
  local dir=$REPORT level
  [ -f "$dir/report.json" ] || { escape "the run left no report"; return 0; }
  level=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"]["isolation"].get("level"))' "$dir/report.json" 2>/dev/null)
  run_prereg audit "$dir"
  [ "$rc" -eq 0 ] || escape "the report does not audit: $(grep '^FAIL' "$WORK/out" | head -n 1)"
  if [ "$level" != sandboxed ] && unshare -Ur true 2>/dev/null; then
    escape "the run's isolation is $level where user namespaces work"
  fi
  run_prereg ledger verify
  [ "$rc" -eq 0 ] || escape "the ledger no longer verifies: $(head -n 1 "$WORK/err")"
}

# verdict: exit 0 when contained, else 1 with one line naming what succeeded.
verdict() {
  if [ -n "$escaped" ]; then
    echo "$escaped"
    exit 1
  fi
  echo "contained"
  exit 0
}
