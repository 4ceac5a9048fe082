# End-to-end: what a run tells you and how versions are named (issue 46). `run` and `try` end
# with a summary on stderr (verdicts, excluded and errored arms, the cache policy, the copy
# ceiling, escaped for the terminal) and the folder last on stdout; --quiet drops it. `run ID`
# takes the newest revision with a notice; `list` and `show` show revisions; two versions of one
# revision are refused by id. A changed arm file names the functions whose code changed. `try`
# reuses a ceiling measured within the hour; a frozen run measures it unless its protocol says
# `measurement.ceiling: reuse`, and the audit says which; an entry not signed by the key is
# never reused. Only the first run flushes its samples (the summary's cache line; the cache
# entry): the others do not, to keep the test short.
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
export PREREG_PYTHON=$py
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: $py has no numpy"; exit 77; }
out=$work/reports
json_get() { "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1/report.json" "$2"; }
cat >"$work/arms.py" <<'PY'
# numpy arms of the built-in layernorm forward (fp32), for tests/e2e/first_hour.sh
import numpy as np


def ln(t):
    def step():
        m = t.x.mean(axis=1, keepdims=True)
        v = ((t.x - m) ** 2).mean(axis=1, keepdims=True)
        t.y[...] = (t.x - m) / np.sqrt(v + t.eps) * t.gamma + t.beta
    return step


def unscaled(t):  # forgets gamma and beta: wrong outputs
    def step():
        m = t.x.mean(axis=1, keepdims=True)
        t.y[...] = (t.x - m) / np.sqrt(((t.x - m) ** 2).mean(axis=1, keepdims=True) + t.eps)
    return step


def raises(t):  # a message with terminal escapes and a right-to-left override
    def step():
        raise RuntimeError("bad \x1b[31mred\u202eevil")
    return step
PY
protocol() { # FILE ID REVISION EXTRA-ARMS MEASUREMENT-EXTRA
  cat >"$1" <<EOF
prereg: 2
id: $2
revision: $3
title: first hour
hypothesis: the numpy arm is not a hundred times slower than the built-in one
device: cpu
operation: layernorm
dtype: fp32
axes:
  rows: [8]
  cols: [64]
passes: [fwd]
arms:
  - id: builtin
    kernel: layernorm.fused
  - id: numpy
    python: arms.py
    function: ln
$4
measurement:
  repetitions: 3
  warmup: 1$5
analysis:
  bootstrap_resamples: 100
predictions:
  - id: P1
    claim: "The numpy arm is not a hundred times slower than the built-in one, a claim long enough to be cut in the summary"
    expect: "numpy < 100 * builtin"
EOF
}

# --- revisions by name -----------------------------------------------------------------------
protocol "$work/r1.yaml" revs 1 "" ""
protocol "$work/r2.yaml" revs 2 "" ""
expect_exit 0 "freeze revision 1" -- "$PREREG" freeze "$work/r1.yaml"
h1=$(tail -n 1 "$work/out")
expect_exit 0 "freeze revision 2" -- "$PREREG" freeze "$work/r2.yaml"
h2=$(tail -n 1 "$work/out")
expect_err "^prereg: notice: protocol revs now has 2 frozen versions: this one ${h2:0:12} \(revision 2\) and ${h1:0:12} \(revision 1, frozen [0-9T:.Z-]+\); \`prereg run revs\` runs this one, the newest revision$" \
  "freeze says which version \`run revs\` takes"
expect_exit 0 "list" -- "$PREREG" list
grep -qE "^$h1  revs +  1  " "$work/out" && grep -qE "^$h2  revs +  2  " "$work/out" \
  && pass "list shows each version's revision" || fail "list: $(cat "$work/out")"
expect_exit 0 "show by id" -- "$PREREG" show revs
grep -q "^protocol $h2$" "$work/out" && grep -qx "  revision: 2 (2 frozen versions of this id)" "$work/out" \
  && pass "show by id: the newest revision, numbered" || fail "show: $(head -4 "$work/out")"
expect_err "^prereg: notice: protocol revs has 2 frozen versions: taking the newest revision, 2 \(${h2:0:12}, frozen [0-9T:.Z-]+\); give a hash or a prefix for another: ${h1:0:12} \(revision 1, frozen [0-9T:.Z-]+\)$" \
  "  ... and says which"
expect_exit 0 "run by id" -- "$PREREG" run revs --out "$out"
dir=$(tail -n 1 "$work/out")
[ "$(json_get "$dir" "r['protocol']['hash']")" = "$h2" ] && pass "run by id ran the newest revision" || fail "ran $(json_get "$dir" "r['protocol']['hash']")"
expect_err "^prereg: notice: protocol revs has 2 frozen versions: taking the newest revision, 2 " "  ... with the notice"

# --- the summary -----------------------------------------------------------------------------
sed -n '/^prereg: revs revision 2, run /,$p' "$work/err" >"$work/summary"
head -n 1 "$work/summary" | grep -qE "^prereg: revs revision 2, run $(basename "$dir") \(attempt 1\): 1 prediction\(s\): 1 (confirmed|refuted|inconclusive)$" \
  && pass "the summary's header: id, revision, run, attempt, verdicts" || fail "summary: $(cat "$work/err")"
grep -qE "^  P1  (confirmed|refuted|inconclusive) +The numpy arm is not a hundred times slower than the built-in one, a cla\.\.\.$" "$work/summary" \
  && pass "  ... each prediction: id, verdict, claim cut" || fail "  ... predictions: $(cat "$work/summary")"
# The suite sets PREREG_CPU_LLC_MB (tests/CMakeLists.txt): the line says the sweep was sized for
# it, not cold; run alone, without it, the line is the real one.
if [ -n "${PREREG_CPU_LLC_MB:-}" ]; then
  grep -qE "^  caches    swept before each sample \(a cache read-sweep of [0-9.]+ MiB\), sized for a last-level cache of [0-9.]+ MiB set by PREREG_CPU_LLC_MB=$PREREG_CPU_LLC_MB where the CPU reports [0-9.]+ [KMG]iB: a sample may run on warm caches, and the ceilings may be cache speeds; a setting for tests, not for claims$" "$work/summary" \
    && pass "  ... the cache policy and its size (the tests' size, said)" || fail "  ... caches: $(grep caches "$work/summary")"
  "$py" - "$dir/report.json" "$PREREG_CPU_LLC_MB" <<'PY' && pass "  ... the report records the override and the detected size" || fail "  ... environment's cache size"
import json, sys
env = json.load(open(sys.argv[1]))["environment"]
n = int(sys.argv[2])
assert env["llc_override"] == f"PREREG_CPU_LLC_MB={n}", env
assert env["llc_bytes"] == n << 20, env
assert isinstance(env["llc_bytes_detected"], int), env
PY
else
  grep -qE "^  caches    flushed before each sample \(a cache read-sweep of [0-9.]+ MiB; the CPU's last-level cache holds [0-9.]+ [KMG]iB\): every sample is a cold-cache time" "$work/summary" \
    && pass "  ... the cache policy and its size" || fail "  ... caches: $(grep caches "$work/summary")"
fi
llc_err=$(PREREG_CPU_LLC_MB=0 "$PREREG" try "$work/r2.yaml" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && echo "$llc_err" | grep -qxF "prereg: error: PREREG_CPU_LLC_MB is not a whole number of MiB from 1 to 1048576: '0' (the environment)" \
  && pass "a bad PREREG_CPU_LLC_MB: one line, exit 2" || fail "bad PREREG_CPU_LLC_MB: rc=$rc $llc_err"
grep -qE "^  ceiling   measured in this run: [0-9.]+ GB/s$" "$work/summary" && pass "  ... the ceiling, measured" || fail "  ... ceiling: $(grep ceiling "$work/summary")"
grep -qxF "  report    $dir/report.md" "$work/summary" && pass "  ... report.md's path" || fail "  ... report: $(tail -1 "$work/summary")"
[ "$(wc -l <"$work/out")" -eq 1 ] && [ -d "$(cat "$work/out")" ] && pass "stdout holds the report folder alone" || fail "stdout: $(cat "$work/out")"

# Excluded and errored arms, escaped (frozen without the dry run: it would refuse them).
protocol "$work/bad.yaml" bad 1 "  - id: unscaled
    python: arms.py
    function: unscaled
  - id: raises
    python: arms.py
    function: raises" "
  l2_flush: false"
expect_exit 0 "freeze --no-dry-run a protocol with a wrong and a raising arm" -- "$PREREG" freeze --no-dry-run "$work/bad.yaml"
expect_exit 0 "its run completes (exit 0 whatever it found)" -- "$PREREG" run bad --out "$out"
grep -qE "^  excluded  unscaled at fwd 8x64: failed correctness: y: element 0 \(row 0, col 0\) is " "$work/err" \
  && pass "the summary names the excluded arm, its cell and why" || fail "summary: $(cat "$work/err")"
grep -qxF '  excluded  raises at fwd 8x64: failed correctness: the arm failed in its correctness run: RuntimeError: bad \x1b[31mred\u202eevil' "$work/err" \
  && pass "  ... an arm's message escaped (ESC, U+202E)" || fail "  ... raises: $(grep raises "$work/err")"
if LC_ALL=C grep -q $'\x1b' "$work/err" || LC_ALL=C grep -q $'\xe2\x80\xae' "$work/err"; then
  fail "raw control bytes on stderr: $(LC_ALL=C grep -n $'\x1b\|\xe2\x80\xae' "$work/err" | head -3 | cat -v)"
else pass "  ... no raw escape or override on stderr"; fi
grep -qE "^  ceiling   measured in this run" "$work/err" && pass "  ... its ceiling measured: its protocol does not ask for reuse" || fail "$(grep ceiling "$work/err")"

# Two versions of the highest revision: the id alone names none of them.
protocol "$work/r2b.yaml" revs 2 "" ""
sed -i 's/^  repetitions: 3$/  repetitions: 4/' "$work/r2b.yaml"
expect_exit 0 "freeze a second version of revision 2" -- "$PREREG" freeze "$work/r2b.yaml"
h3=$(tail -n 1 "$work/out")
expect_err "; revision 2 is frozen more than once, so .prereg run revs. will need a hash or a prefix \(.prereg run ${h3:0:12}.\); set .revision: 3. to make this one the newest$" \
  "freeze says the id no longer names one version, and how to fix it"
expect_exit 2 "run by id then refuses" -- "$PREREG" run revs --out "$out" --quiet
expect_err "^prereg: error: 3 versions of protocol revs are frozen: .*${h3:0:12} \(revision 2, frozen [0-9T:.Z-]+\); revision 2 is frozen more than once, so the id alone names none of them: give a hash or a prefix of at least 8 hex digits$" \
  "  ... listing each version with its revision"

# --- a changed arm file names the function ---------------------------------------------------
echo "# a comment only" >>"$work/arms.py"
expect_exit 3 "a comment added after freezing: refused" -- "$PREREG" run "$h2" --out "$out" --quiet
expect_err "^prereg: error: python file of arm numpy changed since freezing \(frozen [0-9a-f]{12}, now [0-9a-f]{12}\): $work/arms.py \(no function's code changed: only comments or formatting\); this version stays refused" \
  "  ... saying no function's code changed"
sed -i 's/raise RuntimeError("bad/raise ValueError("bad/' "$work/arms.py"
expect_exit 3 "the raises function edited: refused" -- "$PREREG" run bad --out "$out" --quiet
expect_err "^prereg: error: python file of arms numpy \(ln\), unscaled \(unscaled\), raises \(raises\) changed since freezing \(.*\): $work/arms.py \(function raises changed\); this version" \
  "  ... naming every arm of the file and the function that changed"

# --- the copy ceiling: reused by try, measured by a run unless its protocol opts in ----------
sed -i 's/raise ValueError("bad/raise RuntimeError("bad/; /^# a comment only$/d' "$work/arms.py"
protocol "$work/tried.yaml" tried 1 "" "
  l2_flush: false"
expect_exit 0 "try after the runs above" -- "$PREREG" try "$work/tried.yaml" --out "$work/x"
tdir=$(tail -n 1 "$work/out")
grep -qE "^  ceiling   reused: [0-9.]+ GB/s, measured [0-9]+ min before this run by run [0-9TZ]+-[0-9a-f]{12}-[0-9a-f]{6} on this device and build" "$work/err" \
  && pass "  ... reuses the ceiling a run measured, saying how old and from where" || fail "$(grep ceiling "$work/err")"
[ "$(json_get "$tdir" "r['schema_version'], r['instrument']['ceiling_reused']['ceiling_gbps'] == r['instrument']['ceiling_gbps']")" = "(8, True)" ] \
  && pass "  ... its report: schema_version 8, instrument.ceiling_reused with the values used" || fail "report: $(json_get "$tdir" "r['schema_version']")"
grep -q "copy ceiling: reused" "$tdir/report.md" && pass "  ... report.md says so in its Summary" || fail "report.md lacks it"
protocol "$work/reuse.yaml" reuse 1 "" "
  l2_flush: false
  ceiling: reuse"
expect_exit 0 "freeze a protocol with measurement.ceiling: reuse" -- "$PREREG" freeze "$work/reuse.yaml"
expect_exit 0 "its run, --quiet" -- "$PREREG" run reuse --out "$out" --quiet
rdir=$(tail -n 1 "$work/out")
[ -s "$work/err" ] && fail "  ... printed on stderr: $(cat "$work/err")" || pass "  ... prints no summary (nor anything else)"
[ "$(json_get "$rdir" "r['schema_version'], 'ceiling_reused' in r['instrument']")" = "(8, True)" ] \
  && pass "  ... reuses the ceiling" || fail "report: $(json_get "$rdir" "r['schema_version']")"
expect_exit 0 "its report audits clean" -- "$PREREG" audit "$rdir"
grep -qE "^PASS statistics: .*; ceiling: reused, [0-9]+ min old, measured by (run|try) [^ ]+ \(its signed entry verifies\)(;|$)" "$work/out" \
  && pass "  ... the audit says the ceiling was reused, how old, from which run" || fail "audit: $(grep statistics "$work/out")"
if "$py" -c 'import jsonschema' 2>/dev/null; then
  for d in "$rdir" "$dir"; do
    "$py" "$PREREG_SOURCE_DIR/tests/schemas/validate.py" "$PREREG_SOURCE_DIR/docs/schema" report "$d/report.json" >"$work/val" 2>&1 \
      && pass "report.schema.json holds for $(json_get "$d" "'schema_version ' + str(r['schema_version'])")" || fail "schema: $(head -5 "$work/val")"
  done
fi
expect_exit 0 "an earlier report audits" -- "$PREREG" audit "$dir"
grep -qE "^PASS statistics: .*; ceiling: measured in this run(;|$)" "$work/out" && pass "  ... saying its ceiling was measured" || fail "$(grep statistics "$work/out")"
# An entry the key did not sign (written by anyone who can write the cache) is not reused.
entry=$(ls "$XDG_CACHE_HOME"/prereg/ceilings/*.json | head -n 1)
"$py" - "$entry" <<'PY'
import json, sys
p = sys.argv[1]; e = json.load(open(p)); e["ceiling_gbps"] *= 10
open(p, "w").write(json.dumps(e))
PY
expect_exit 0 "try with a forged cache entry" -- "$PREREG" try "$work/tried.yaml" --out "$work/x"
grep -qE "^  ceiling   measured in this run" "$work/err" && pass "  ... measures: the forged entry is not trusted" || fail "$(grep ceiling "$work/err")"
finish
