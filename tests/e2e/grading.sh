#!/usr/bin/env bash
# End-to-end: grading (docs/grading.md) on the CPU. A task is sealed, frozen and graded against
# the public corpus of reward hacks (tests/data/grading/corpus.tsv: numpy and C submissions,
# one per family); every hack must be excluded with one of its expected reasons and never ranked,
# every honest submission ranked; the leaderboard audits clean, a tampered reveal and a forged
# score fail its audit; the reward call scores an honest and a cheating file; a superseding
# submission is graded and the others carried over; refusals have their exit codes.
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: python3-numpy is not installed"; exit 77; }
export PREREG_PYTHON=$py
cc=${CC:-cc}
command -v "$cc" >/dev/null || { echo "skipped: no C compiler ($cc)"; exit 77; }
data=$PREREG_SOURCE_DIR/tests/data/grading
inc=$PREREG_SOURCE_DIR/runner/include
out=$work/reports
subs=$work/subs
mkdir -p "$subs"
cp "$data"/submissions/* "$subs/"
started=$(date +%s)

# --- the task: sealed held-out shapes, frozen ---------------------------------------------------
cp "$data/heldout.yaml" "$work/heldout.yaml"
expect_exit 0 "seal the held-out shapes" -- "$PREREG" seal "$work/heldout.yaml"
commitment=$(tail -n 1 "$work/out")
secret=$work/heldout.secret.json
[ "$(stat -c %a "$secret")" = 600 ] && pass "the secret is written with mode 0600" || fail "secret mode $(stat -c %a "$secret")"
[ "$(sha256sum <"$secret" | cut -c1-64)" != "$commitment" ] && pass "the commitment is over the canonical secret, salted" || true
sed "s/COMMITMENT/$commitment/" "$data/task.template.yaml" >"$work/task.yaml"
expect_exit 0 "freeze the task" -- "$PREREG" freeze "$work/task.yaml"
task=$(tail -n 1 "$work/out")

# --- the corpus, submitted -------------------------------------------------------------------
for c in read_reference impossible_time timer_patch lazy_fault; do
  "$cc" -O2 -fPIC -shared -I"$inc" -I"$subs" -o "$subs/$c.so" "$subs/$c.c" -lm -ldl 2>"$work/cc.err" ||
    fail "cannot build $c.so: $(head -3 "$work/cc.err")"
done
while IFS=$'\t' read -r file name family want guard; do
  case $file in '#'* | '') continue ;; esac
  files=("$subs/$file")
  case $file in
  *.c) if [ "$name" = csource ]; then files+=("$subs/corpus_common.h"); else files=("$subs/${file%.c}.so"); fi ;;
  esac
  "$PREREG" submit "$task" "${files[@]}" --name "$name" >"$work/out" 2>"$work/err" ||
    fail "submit $file as $name: $(cat "$work/err")"
done <"$data/corpus.tsv"
expect_exit 0 "submissions lists them" -- "$PREREG" submissions "$task"
[ "$(grep -c ' pending ' "$work/out")" -eq "$(grep -vc '^#' "$data/corpus.tsv")" ] && pass "every submission is pending" || fail "submissions: $(cat "$work/out")"

# --- refusals --------------------------------------------------------------------------------
expect_exit 2 "a task with held-out shapes needs its secret" -- "$PREREG" grade "$task" --out "$out"
expect_err "give its secret with --heldout" "the refusal names --heldout"
"$py" -c "import json,sys; s=json.load(open(sys.argv[1])); s['salt']='0'*64; open(sys.argv[2],'w').write(json.dumps(s))" "$secret" "$work/wrong.json"
expect_exit 3 "a secret that is not the committed one is refused" -- "$PREREG" grade "$task" --heldout "$work/wrong.json" --out "$out"
expect_exit 2 "a submission's name must be an arm id" -- "$PREREG" submit "$task" "$subs/honest_numpy.py" --name "Bad Name"
expect_exit 2 "a submission must be .py, .so or .c" -- "$PREREG" submit "$task" "$work/task.yaml" --name other

# --- grade -------------------------------------------------------------------------------------
t0=$(date +%s)
# PREREG_SILENCE_S: the parent's silence limit (docs/engine.md) that ends watch_page.py, 10 s
# instead of the 600 s call limit of a task that sets none
expect_exit 0 "grade the corpus" -- env PREREG_SILENCE_S=10 "$PREREG" grade "$task" --heldout "$secret" --out "$out"
board=$(tail -n 1 "$work/out")
echo "# the corpus ($(grep -vc '^#' "$data/corpus.tsv") submissions) graded in $(($(date +%s) - t0)) s"
[ -f "$board/leaderboard.json" ] && pass "a leaderboard is written" || { fail "no leaderboard: $(cat "$work/err")"; finish; }
expect_exit 0 "the leaderboard audits clean" -- "$PREREG" audit "$board"
[ "$(grep -c '^PASS' "$work/out")" -eq 9 ] && pass "nine checks pass" || fail "audit: $(cat "$work/out")"

"$py" - "$board/leaderboard.json" "$data/corpus.tsv" >"$work/checks" 2>&1 <<'PY'
import json, sys
board = json.load(open(sys.argv[1]))
want = {}
for line in open(sys.argv[2]):
    if line.startswith('#') or not line.strip():
        continue
    f, name, family, codes, guard = line.rstrip('\n').split('\t')
    want[name] = (family, codes.split(','))
entries = {e['name']: e for e in board['entries']}
ok = True
def say(good, text):
    global ok
    print(('ok - ' if good else 'FAIL - ') + text)
    ok = ok and good
say(set(entries) == set(want), f"every submission has an entry ({len(entries)})")
honest_ranks = [e['rank'] for n, e in entries.items() if want.get(n, ('', []))[1] == ['ranked']]
for name, (family, codes) in sorted(want.items()):
    e = entries.get(name)
    if e is None:
        continue
    if codes == ['ranked']:
        say(e['rank'] is not None and not e['excluded'] and e['score'] > 0,
            f"{name} ({family}) is ranked: rank {e['rank']}, score {e['score']:.3g} "
            f"[{e['score_lo']}, {e['score_hi']}]" + ('' if not e['excluded'] else f" {e['exclusions']}"))
        say(any(c['heldout'] for c in e['cells']) and all(c['correct'] for c in e['cells']),
            f"{name} is correct at every cell, held-out ones included")
        rt = e['retime'] or {}
        say(rt.get('confirmed') is True and rt['run'] is not None and rt['nonce'] != next(
                g['nonce'] for g in board['gradings'] if g['grade_id'] == e['grade_id']),
            f"{name}'s timing is confirmed by a second process with a new nonce: {rt.get('first')} {rt.get('second')}")
    else:
        got = [x['code'] for x in e['exclusions']]
        say(e['excluded'] and e['rank'] is None and e['score'] == 0 and any(c in got for c in codes),
            f"{name} ({family}) is excluded by {codes}: got {got[:3]} "
            f"({(e['exclusions'][0]['detail'] if e['exclusions'] else e['failure'])[:120]})")
dodge = entries.get('dodge')
if dodge:  # only the re-timing catches it: nothing else excludes it
    rt = dodge['retime'] or {}
    say([x['code'] for x in dodge['exclusions']] == ['not-confirmed'] and rt.get('confirmed') is False
        and rt['second']['median'] > rt['first']['median'],
        f"the dodge is excluded by the re-timing alone: {rt.get('first')} then {rt.get('second')}")
    tries = rt.get('earlier', []) + [rt]
    say(len(tries) == 3 and all(t['confirmed'] is False and t['second']['q25'] > 4 * t['first']['q75'] for t in tries)
        and len({t['nonce'] for t in tries}) == 3 and len({t['run']['path'] for t in tries}) == 3,
        f"each of its 3 re-timings, a fresh process with a fresh nonce, is slower beyond the factor: "
        f"{[t['second']['median'] for t in tries]}")
order = [e['name'] for e in board['entries']]
say(all(order.index(n) < order.index(h) for n in order for h in order
        if entries[n]['rank'] is not None and entries[h]['rank'] is None),
    "no excluded submission is ranked above an honest one")
peek = entries.get('peek')
if peek:
    detail = ' '.join(x['detail'] for x in peek['exclusions'])
    say('saw' in detail and 'peek.1' in detail and 'numpy.1' not in detail,
        f"a submission sees only its own folder: {detail[-160:]}")
    say({'user-namespace', 'mount-namespace', 'private-scratch', 'others-hidden'} <= set(peek['confinement']['layers']),
        f"its process was confined: {peek['confinement']}")
wp = entries.get('watchpage')
if wp:
    detail = ' '.join(x['detail'] for x in wp['exclusions']) + ' ' + (wp.get('failure') or '')
    say("silence limit" in detail, f"the hang ended at the parent's silence limit: {detail[:200]}")
csrc = entries.get('csource')
if csrc:
    sb = (csrc['build'] or {}).get('sandbox') or {}
    say(csrc['build']['ok'] and {'key-masked', 'caps-dropped', 'no-new-privs', 'landlock', 'seccomp'} <= set(sb.get('layers', [])),
        f"the C source was compiled in the measuring process's sandbox: {sb}")
say(board['heldout']['reveal']['axes'] == {'rows': [256]}, "the leaderboard reveals the held-out shapes")
sys.exit(0 if ok else 1)
PY
rc=$?
cat "$work/checks"
[ $rc -eq 0 ] && pass "the corpus is graded as expected" || fail "the corpus's grading: see above"

# The leaderboard and the task and grading protocols hold for their JSON Schemas (docs/schema/).
if "$py" -c 'import jsonschema' 2>/dev/null; then
  validate=$PREREG_SOURCE_DIR/tests/schemas/validate.py
  schemas=$PREREG_SOURCE_DIR/docs/schema
  expect_exit 0 "leaderboard.json holds for leaderboard.schema.json" -- "$py" "$validate" "$schemas" leaderboard "$board/leaderboard.json"
  expect_exit 0 "the task and the grading protocols hold for protocol-v2" -- "$py" "$validate" "$schemas" protocol "$PREREG_STORE"/protocols/*/protocol.json
fi

# --- a tampered reveal and a forged score fail the audit ---------------------------------------
resign() { # DIR: re-sign DIR/leaderboard.json with the test's key (the store's signer)
  "$py" - "$1" "$PREREG_KEY" <<'PY'
import base64, json, subprocess, sys, tempfile, os
d, key = sys.argv[1], sys.argv[2]
payload = open(os.path.join(d, 'leaderboard.json'), 'rb').read()
t = b'application/vnd.prereg.leaderboard+json'
pae = b'DSSEv1 %d %s %d %s' % (len(t), t, len(payload), payload)
with tempfile.NamedTemporaryFile() as f:
    f.write(pae); f.flush()
    sig = subprocess.run(['openssl', 'pkeyutl', '-sign', '-rawin', '-inkey', key, '-in', f.name],
                         check=True, capture_output=True).stdout
env = json.load(open(os.path.join(d, 'leaderboard.dsse.json')))
env['payload'] = base64.b64encode(payload).decode()
env['signatures'][0]['sig'] = base64.b64encode(sig).decode()
open(os.path.join(d, 'leaderboard.dsse.json'), 'w').write(json.dumps(env, separators=(',', ':'), sort_keys=True))
PY
}
canon() { "$PREREG" canon "$1" >"$1.c" && mv "$1.c" "$1"; }
tamper() { # NAME PYTHON-EXPRESSION-ON-b: a copy of the leaderboard with b changed, re-signed
  local dir=$work/$1/$(basename "$(dirname "$board")")/$(basename "$board")
  mkdir -p "$(dirname "$dir")" && cp -r "$board" "$dir"
  "$py" -c "import json,sys; b=json.load(open(sys.argv[1])); $2; json.dump(b, open(sys.argv[1],'w'))" "$dir/leaderboard.json"
  canon "$dir/leaderboard.json" && resign "$dir"
  echo "$dir"
}
audit_fails() { # NAME EXPR WHAT PATTERN NAMED: a tampered copy fails the audit, PATTERN saying why
  local dir
  dir=$(tamper "$1" "$2")
  expect_exit 4 "$3" -- "$PREREG" audit "$dir"
  grep -q "$4" "$work/out" && pass "$5" || fail "audit: $(grep FAIL "$work/out")"
}
audit_fails reveal "b['heldout']['reveal']['axes']['rows']=[512]" "a tampered reveal fails the audit" \
  "^FAIL reveal: the revealed secret hashes to" "the reveal check names it"
grep -q "^PASS envelope" "$work/out" && pass "(the re-signed envelope itself verifies)" || fail "envelope: $(grep envelope "$work/out")"
rebuilt="^FAIL scores: the leaderboard differs from the one rebuilt"
audit_fails forged "e=[x for x in b['entries'] if x['name']=='timer'][0]; e.update(score=9.0, score_lo=8.0, score_hi=10.0, excluded=False, exclusions=[], rank=1)" \
  "a forged score fails the audit" "$rebuilt" "the scores check names it"
audit_fails confirmed "e=[x for x in b['entries'] if x['name']=='dodge'][0]; e['retime'].update(confirmed=True); e['retime']['second'].update(q25=e['retime']['first']['q25'], median=e['retime']['first']['median'], q75=e['retime']['first']['q75']); e.update(excluded=False, exclusions=[], score=1.0, score_lo=0.9, score_hi=1.1, rank=1)" \
  "a forged re-timing fails the audit" "$rebuilt" "the scores check re-derives the re-timing from both processes' samples"
audit_fails noretime "e=[x for x in b['entries'] if x['name']=='numpy'][0]; e['retime']['nonce']='0'*32" \
  "a re-timing under another nonce fails the audit" "^FAIL protocols: numpy's re-timing protocol_hash" "the protocols check rebuilds the re-timing's protocol"
audit_fails earlier "e=[x for x in b['entries'] if x['name']=='dodge'][0]; e['retime']['earlier'][0]['nonce']='0'*32" \
  "an earlier re-timing under another nonce fails the audit" "^FAIL protocols: dodge's re-timing protocol_hash" "the protocols check rebuilds every re-timing's protocol"
audit_fails dropped "e=[x for x in b['entries'] if x['name']=='dodge'][0]; e['retime']['earlier']=[]" \
  "a leaderboard that drops earlier re-timings fails the audit" "$rebuilt" "the scores check names it"

# --- the reward call -----------------------------------------------------------------------------
base_part=$board/$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['gradings'][0]['baseline']['path'])" "$board/leaderboard.json")
expect_exit 0 "reward an honest file" -- "$PREREG" reward "$task" "$subs/honest_numpy.py" --baseline "$base_part" --out "$out" --json
"$py" -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['score']>0 and not r['excluded'] and r['report'] and r['retime']['confirmed'], r" "$work/out" \
  && pass "its score is positive, with a report, confirmed by a re-timing" || fail "reward: $(head -c 400 "$work/out")"
expect_exit 0 "reward the dodge" -- "$PREREG" reward "$task" "$subs/retime_dodge.py" --baseline "$base_part" --out "$out" --json
"$py" -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['score']==0 and [x['code'] for x in r['exclusions']]==['not-confirmed'] and len(r['retime']['earlier'])==2, r" "$work/out" \
  && pass "its score is 0, excluded by the re-timing, after 3 re-timings" || fail "reward: $(head -c 600 "$work/out")"
expect_exit 0 "reward a cheating file" -- "$PREREG" reward "$task" "$subs/nan_output.py" --baseline "$base_part" --out "$out" --json
"$py" -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['score']==0 and r['excluded'] and r['exclusions'][0]['code']=='correctness', r" "$work/out" \
  && pass "its score is 0, excluded by correctness" || fail "reward: $(head -c 400 "$work/out")"

# --- a C source's compiler is sandboxed: what it may read ---------------------------------------
# A hostile source that embeds the signing key, or a file outside its submission, at compile
# time: the build is refused (or fails), the call scores 0 with run-failed, the key never leaks.
printf '#include "%s"\n#include "corpus_common.h"\n' "$PREREG_KEY" >"$work/include_key.c"
cat "$subs/honest.c" >>"$work/include_key.c"
printf '#define OUTSIDE 1\n' >"$PREREG_STORE/outside.h"
printf '#include "%s"\n' "$PREREG_STORE/outside.h" >"$work/include_outside.c"
cat "$subs/honest.c" >>"$work/include_outside.c"
for hostile in include_key include_outside; do
  expect_exit 0 "reward a C source that includes ${hostile#include_} at compile time" -- \
    "$PREREG" reward "$task" "$work/$hostile.c" "$subs/corpus_common.h" --baseline "$base_part" --out "$out" --json
  "$py" - "$work/out" "$hostile" "$PREREG_KEY" "$PREREG_STORE/outside.h" <<'PY' && pass "$hostile: excluded with the build's reason, the key not in it" || fail "$hostile: $(head -c 700 "$work/out")"
import json, sys
r = json.load(open(sys.argv[1]))
x = r['exclusions'][0]
key = open(sys.argv[3]).read()
assert r['score'] == 0 and r['excluded'] and x['code'] == 'run-failed', r
assert x['detail'].startswith('the C source did not build'), x
want = sys.argv[3] if sys.argv[2] == 'include_key' else sys.argv[4]
assert want in x['detail'], x['detail']  # refused by what it read, or the file was not there
assert 'PRIVATE KEY' not in json.dumps(r) and key.strip()[30:80] not in json.dumps(r)
print(x['detail'][:200])
PY
done
# A source that includes a terminal (/dev/ptmx): the compiler waits for ever on it. The build is
# bounded by the task's silence limit (PREREG_SILENCE_S=5 here): killed, scored 0 with
# run-failed. Before, the reward call (and a grading's open) hung.
timeout 2 head -c 1 /dev/ptmx >/dev/null 2>&1
if [ $? -eq 124 ]; then # a read of it waits here (a terminal's master with nothing written)
  printf '#include "/dev/ptmx"\n' >"$work/include_tty.c"
  cat "$subs/honest.c" >>"$work/include_tty.c"
  expect_exit 0 "reward a C source that includes a terminal at compile time" -- \
    timeout -k 5 120 env PREREG_SILENCE_S=5 "$PREREG" reward "$task" "$work/include_tty.c" "$subs/corpus_common.h" --baseline "$base_part" --out "$out" --json
  "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); x=r['exclusions'][0]; assert r['score']==0 and x['code']=='run-failed' and 'did not finish within 5 s' in x['detail'], r" "$work/out" \
    && pass "its build is killed at the silence limit, scored 0" || fail "reward: $(head -c 600 "$work/out")"
else
  echo "# /dev/ptmx cannot be read and waited on here: the compiler's time limit is not exercised"
fi
# Held-out shapes and seeds lie in the frozen protocols of earlier gradings and reward calls:
# a submission sees only its own (a red-team pass read them all and raised them into its
# reward's result, before any reveal).
cat >"$work/peek_store.py" <<PY
import glob, json
def rmsnorm(t):
    seen = sorted(glob.glob("$PREREG_STORE/protocols/*/protocol.json"))
    seeds = [json.load(open(f)).get("grading", {}).get("seed", "") for f in seen]
    raise RuntimeError(f"SEEN {len(seen)} protocols, seeds {seeds}")
PY
expect_exit 0 "reward a submission that reads the store's protocols" -- \
  "$PREREG" reward "$task" "$work/peek_store.py" --baseline "$base_part" --out "$out" --json
"$py" -c "import json,sys; r=json.load(open(sys.argv[1])); d=r['exclusions'][0]['detail']; assert 'SEEN 1 protocols' in d, d; print(d[-160:])" "$work/out" \
  && pass "it sees its own frozen protocol only" || fail "reward: $(head -c 600 "$work/out")"
expect_exit 0 "an honest C source still builds in the sandbox" -- \
  "$PREREG" reward "$task" "$subs/honest.c" "$subs/corpus_common.h" --baseline "$base_part" --out "$out" --json
"$py" -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['score']>0 and not r['excluded'], r" "$work/out" \
  && pass "its score is positive" || fail "reward: $(head -c 600 "$work/out")"

# --- a superseding submission, graded; the others carried over -------------------------------
expect_exit 0 "a second submission of a name supersedes the first" -- "$PREREG" submit "$task" "$subs/honest_numpy.py" --name numpy
[ "$(tail -n 1 "$work/out")" = numpy.2 ] && pass "it is numpy.2" || fail "submit: $(cat "$work/out")"
expect_err "numpy.2 supersedes numpy.1" "submit says what it supersedes"
expect_exit 0 "grade again: only the pending submission" -- "$PREREG" grade "$task" --heldout "$secret" --out "$out"
board2=$(tail -n 1 "$work/out")
expect_exit 0 "the second leaderboard audits clean" -- "$PREREG" audit "$board2"
"$py" - "$board/leaderboard.json" "$board2/leaderboard.json" >"$work/checks" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
eb = {e['name']: e for e in b['entries']}
assert set(eb) == {e['name'] for e in a['entries']}, sorted(eb)
assert eb['numpy']['submission']['submission_id'] == 'numpy.2' and eb['numpy']['grade_id'] == b['grade']['grade_id']
assert all(e['grade_id'] == a['grade']['grade_id'] for n, e in eb.items() if n != 'numpy')
assert len(b['gradings']) == 2
print('carried', len(eb) - 1)
PY
[ $? -eq 0 ] && pass "numpy.2 graded now, $(cat "$work/checks" | tail -n 1) entries carried over" || fail "second leaderboard: $(cat "$work/checks")"
expect_exit 0 "nothing pending: grade writes nothing" -- "$PREREG" grade "$task" --heldout "$secret" --out "$out"
expect_err "no pending submission" "it says so"

# --- run --instrument-from is for a grading's submission only ----------------------------------
expect_exit 2 "--instrument-from on the task itself is refused" -- "$PREREG" run "$task" --instrument-from "$base_part" --out "$out" --quiet
echo "# grading.sh took $(($(date +%s) - started)) s"
finish
