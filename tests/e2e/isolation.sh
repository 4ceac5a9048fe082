# End-to-end: planted attackers in the measuring process (docs/audit.md, "The threat model";
# docs/engine.md, "The measuring process"). A Python arm and a C plugin hunt for the signing key
# through the environment, /proc (every process they can see, the parent's environ, mem and
# fds), the key file and its folder, ~/.config/prereg, the store and inherited descriptors, and
# try to write the store, the ledger, the reports folder and the project; each writes what it
# saw into a loot folder outside everything the sandbox protects, and this test checks that the
# loot holds no key material and that every write was refused, while the report is signed and
# audits. Python arms that write a forged result into the channel fail the run (exit 1, no
# report, run-aborted in the ledger). Where this machine gives no user namespaces, the report
# must say `isolation: none` with the reason, and the hunt is not asserted.
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
export PREREG_PYTHON=$py
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: $py has no numpy"; exit 77; }
data=$PREREG_SOURCE_DIR/tests/data
loot=$(mktemp -d) # outside the project ($work): the attackers' only writable place besides /tmp
trap 'rm -rf "$work" "$loot"' EXIT
out=$work/reports
mkdir -p "$work/p/isolation" "$work/p/python" "$out"
cp "$data/isolation/attackers.py" "$data/isolation/protocol_hunt.yaml" \
  "$data/isolation/protocol_forge.yaml" "$work/p/isolation/"
cp "$data/python/cheating_arms.py" "$work/p/python/"
${CC:-cc} -O1 -fPIC -shared -D_GNU_SOURCE -I"$PREREG_SOURCE_DIR/runner/include" \
  -o "$work/p/isolation/hunter.so" "$data/isolation/hunter_plugin.c" || { fail "cannot build the plugin"; finish; }
sed -i 's#PLUGIN_PATH#hunter.so#' "$work/p/isolation/protocol_hunt.yaml"
export ATTACK_LOOT=$loot # what else the attackers are told is in files (an environment variable
# would put the key's path into every environment block they read)
printf '{"key": "%s", "store": "%s", "reports": "%s", "project": "%s"}\n' "$PREREG_KEY" "$PREREG_STORE" "$out" "$work" >"$loot/config.json"
printf '%s\n%s\n%s\n' "$PREREG_KEY" "$PREREG_STORE" "$out" >"$loot/plugin.conf"
json_get() { "$py" -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2"; }

# (--no-dry-run: its arms attack and are wrong on purpose; they are measured, not dry-run)
expect_exit 0 "freeze the hunting protocol" -- "$PREREG" freeze "$work/p/isolation/protocol_hunt.yaml" --no-dry-run
hash=$(tail -n 1 "$work/out")
ledger_before=$(sha256sum "$PREREG_STORE/ledger.jsonl" | cut -c1-64)
expect_exit 0 "run it: the attackers do not stop the run" -- "$PREREG" run "$hash" --out "$out" --quiet
cp "$work/err" "$work/run.err" # the attackers' loot, also written on stderr (below)
dir=$(tail -n 1 "$work/out")
expect_exit 0 "its report is signed and audits clean" -- "$PREREG" audit "$dir"
expect_exit 0 "the ledger verifies" -- "$PREREG" ledger verify
json_get "$dir/report.json" "[d['message'] for d in r['deviations'] if d['kind']=='arm-error']" \
  | grep -q "RuntimeError: planted capture failure: unsupported call'" \
  && pass "an arm's failure reason is the exception's type and first line, not its trailer" \
  || fail "arm-error: $(json_get "$dir/report.json" "[d['message'] for d in r['deviations'] if d['kind']=='arm-error']")"
log=$(json_get "$dir/report.json" "r['run']['arm_log']['file']")
[ "$(json_get "$dir/report.json" "r['run']['arm_log']['sha256']")" = "$(sha256sum "$dir/$log" | cut -c1-64)" ] \
  && grep -q "in step" "$dir/$log" && grep -q "TORCHDYNAMO_VERBOSE" "$dir/$log" \
  && pass "the full traceback is in $log beside the report, named by its SHA-256" || fail "arm log: $(ls "$dir")"
cp -r "$dir" "$work/tampered" && echo "edited" >>"$work/tampered/$log"
expect_exit 4 "a changed arm log fails the audit" -- "$PREREG" audit "$work/tampered"
grep -q "FAIL pages: .*does not have the SHA-256 run.arm_log names" "$work/out" "$work/err" \
  && pass "the audit's pages check names the log" || fail "audit: $(grep FAIL "$work/out")"
mode=$(json_get "$dir/report.json" "r['run']['isolation']['level']")
grep -q "^| isolation | $mode" "$dir/report.md" && pass "report.md shows the isolation ($mode)" || fail "report.md: $(grep isolation "$dir/report.md")"
grep -q "^| isolation probes | 20 escape(s) tried before any outside code ran" "$dir/report.md" \
  && pass "report.md shows the probes" || fail "report.md: $(grep "isolation probes" "$dir/report.md")"
"$PREREG" audit "$dir" >"$work/audit" 2>&1
grep -q "^PASS isolation: $mode follows from its" "$work/audit" && pass "the audit's isolation check recomputes the level ($mode)" \
  || fail "audit: $(grep isolation "$work/audit")"
[ "$(json_get "$dir/report.json" "r['schema_version']")" = 8 ] && pass "the report is schema_version 8" \
  || fail "schema_version $(json_get "$dir/report.json" "r['schema_version']")"
if [ "$mode" = none ]; then
  json_get "$dir/report.json" "r['run']['isolation']['reason']" | grep -q . \
    && pass "isolation none carries its reason" || fail "no reason for isolation none"
  echo "note: no user namespaces here; the hunt's results are not asserted"
  finish
fi
# The attackers' loot files lie under /tmp, a scratch folder whose writes vanish with the
# measuring process (docs/engine.md, "Scratch"); they also wrote them on stderr.
[ -s "$loot/python.json" ] || grep '^PREREG-TEST-LOOT python.json ' "$work/run.err" | tail -n 1 | cut -d' ' -f3- >"$loot/python.json"
[ -s "$loot/plugin.txt" ] || grep '^PREREG-TEST-LOOT plugin.txt ' "$work/run.err" | cut -d' ' -f3- >"$loot/plugin.txt"
lj() { json_get "$loot/python.json" "$1"; }
key_body=$(grep -v -- '-----' "$PREREG_KEY" | tr -d '\n')
[ -s "$loot/python.json" ] && [ -s "$loot/plugin.txt" ] && grep -q "^key .*refused" "$loot/plugin.txt" && pass "both attackers ran and wrote their loot" \
  || { fail "no loot: $(ls "$loot")"; finish; }
! grep -qF "$key_body" "$loot/python.json" "$loot/plugin.txt" && ! grep -q "PRIVATE KEY" "$loot/python.json" "$loot/plugin.txt" \
  && pass "the loot holds no key bytes" || fail "the attackers found key material"
[ "$(lj "r['env_key']")" = None ] && pass "PREREG_KEY is not in the measuring process's environment" || fail "env: $(lj "r['env_key']")"
has_layer() { json_get "$dir/report.json" "'$1' in r['run']['isolation']['layers']" | grep -q True; }
for layer in no-inherited-fds user-namespace mount-namespace read-only-root read-only-store key-masked pid-namespace fresh-proc mounts-locked caps-dropped no-new-privs landlock seccomp parent-not-dumpable; do
  has_layer $layer || echo "note: layer $layer is missing here: $(json_get "$dir/report.json" "r['run']['isolation']['reason']")"
done
! has_layer fresh-proc || { [ "$(lj "r['processes']")" = "[1, 2]" ] && [ "$(lj "r['pid']")" = 2 ]; } && pass "its /proc shows only its namespace: the init and itself (or the layer is missing)" || fail "processes: $(lj "r['processes']")"
# Without a /proc of its own the process sees this machine's other processes (a shell of the
# same user is readable there, and names the key file): these hold where fresh-proc stands.
if has_layer fresh-proc; then
  [ "$(lj "[p for p in r['proc'] if 'got' in p]")" = "[]" ] && [ "$(lj "len(r['proc'])")" -ge 1 ] \
    && pass "no other process's environ is readable (the init's neither)" || fail "environ: $(lj "r['proc']")"
  [ "$(lj "[p for p in r['mem'] if 'got' in p]")" = "[]" ] && [ "$(lj "len(r['mem'])")" -ge 1 ] \
    && pass "no other process's memory is readable" || fail "mem: $(lj "r['mem']")"
  ! grep -q "KEY-MATERIAL" "$loot/plugin.txt" && ! grep -q " GOT " <(grep -v "^fd " "$loot/plugin.txt") \
    && pass "the plugin's hunt got nothing ($(grep -c refused "$loot/plugin.txt") refusals)" \
    || fail "the plugin got something: $(grep " GOT " "$loot/plugin.txt" | grep -v "^fd ")"
fi
[ "$(lj "'got' in r['parent_fds']")" = False ] && pass "the parent's descriptors are out of reach" || fail "parent fds: $(lj "r['parent_fds']")"
# Besides the channel's socket, only Landlock's held folder, /proc/2/task (an O_PATH descriptor:
# it reads and writes nothing; docs/engine.md, the `landlock` layer).
[ "$(lj "sorted(v for k, v in r['fds'].items() if int(k) > 2 and v.startswith('socket:'))" | grep -o socket | wc -l)" -eq 1 ] \
  && [ "$(lj "[v for k, v in r['fds'].items() if int(k) > 2 and not v.startswith('socket:') and not v.startswith('?') and v != '/proc/2/task']")" = "[]" ] \
  && pass "it inherited only its channel's socket (and Landlock's /proc/2/task)" || fail "fds: $(lj "r['fds']")"
[ "$(lj "'got' in r['key_file']")" = False ] && pass "the key file cannot be read" || fail "key file: $(lj "r['key_file']")"
# (masked by an empty tmpfs: it lists empty, or, made inside the sandbox's user namespace, not at all)
[ "$(lj "r['key_folder'].get('got')")" = "[]" ] || lj "r['key_folder'].get('error', '')" | grep -q "^PermissionError" \
  && pass "the key's folder shows empty or cannot be listed" || fail "key folder: $(lj "r['key_folder']")"
[ "$(lj "[s['what'] for s in r['store'] if s.get('got', {}).get('has_key')]")" = "[]" ] && [ "$(lj "len(r['store']) > 0")" = True ] \
  && pass "the store is readable and holds no key" || fail "store: $(lj "r['store']")"
[ "$(lj "[w['what'] for w in r['writes'][:3] if 'got' in w]")" = "[]" ] \
  && pass "every write to the ledger, the store and the reports was refused" || fail "writes: $(lj "r['writes']")"
! has_layer read-only-root || [ "$(lj "[w['what'] for w in r['writes'][3:] if 'got' in w]")" = "[]" ] \
  && pass "writes to the key folder and the project were refused (or read-only-root is missing)" || fail "writes: $(lj "r['writes']")"
[ "$(lj "'got' in r['readable_elsewhere']")" = True ] && pass "the rest of the file system stays readable" || fail "$(lj "r['readable_elsewhere']")"
[ "$(grep '^fd .*GOT socket' "$loot/plugin.txt" | sort -u | wc -l)" -eq 1 ] && [ "$(grep '^fd ' "$loot/plugin.txt" | grep -v 'GOT /proc/2/task$' | sort -u | wc -l)" -eq 2 ] \
  && pass "the plugin sees only its channel's socket and its own loot file" || fail "plugin fds: $(grep '^fd ' "$loot/plugin.txt")"
[ ! -e "$PREREG_STORE/planted" ] && [ ! -e "$out/planted" ] && { ! has_layer read-only-root || [ ! -e "$work/planted" ]; } \
  && pass "nothing was planted in the store, the reports or the project" || fail "a planted file exists"
json_get "$dir/report.json" "[d['cell']['arm'] for d in r['deviations'] if d['kind']=='arm-excluded']" | grep -q cached \
  && pass "the caching arm beside them is excluded" || fail "deviations: $(json_get "$dir/report.json" "r['deviations']")"

# --- forged results in the channel -----------------------------------------------------------
for forger in forge_and_exit forge_and_go_on; do
  sed -i "s#function: .*#function: $forger#; s#id: e2e_isolation_forge.*#id: e2e_isolation_$forger#" "$work/p/isolation/protocol_forge.yaml"
  expect_exit 0 "freeze the $forger protocol" -- "$PREREG" freeze "$work/p/isolation/protocol_forge.yaml" --no-dry-run
  hash=$(tail -n 1 "$work/out")
  expect_exit 1 "$forger: a forged result fails the run" -- "$PREREG" run "$hash" --out "$out" --quiet
  expect_err "^prereg: error: (the measuring process sent an invalid result|the measuring process \(pid [0-9]+\))" "$forger: the error names the measuring process"
  ! grep -q "pid -1" "$work/err" && pass "$forger: the message names a real pid" || fail "stderr: $(cat "$work/err")"
  [ -z "$(ls "$out/e2e_isolation_$forger" 2>/dev/null)" ] && pass "$forger: no report was written" || fail "$forger: a report exists"
  tail -n 1 "$PREREG_STORE/ledger.jsonl" | grep -q '"event":"run-aborted"' && pass "$forger: the ledger records the run aborted" \
    || fail "$forger: ledger tail $(tail -n 1 "$PREREG_STORE/ledger.jsonl" | cut -c1-200)"
done
expect_exit 0 "the ledger still verifies" -- "$PREREG" ledger verify

# --- prereg try measures in the same sandbox ------------------------------------------------------
expect_exit 0 "try the hunting protocol" -- "$PREREG" try "$work/p/isolation/protocol_hunt.yaml" --out "$work/x" --quiet
json_get "$(tail -n 1 "$work/out")/report.json" "r['run']['isolation']['layers']" | grep -q "'$(
  [ "$mode" = none ] && echo no-inherited-fds || echo user-namespace)'" \
  && pass "its exploratory report records the sandbox" || fail "try: $(cat "$work/err")"

# --- no user namespaces: the run goes on, and its report says `isolation: none` and why --------
# (a user namespace of this test's own whose limit of nested user namespaces is 0)
if unshare -Ur true 2>/dev/null; then
  sed "s#function: .*#function: raises_multiline#; s#id: e2e_isolation_forge.*#id: e2e_isolation_none#" \
    "$data/isolation/protocol_forge.yaml" >"$work/p/isolation/protocol_none.yaml"
  expect_exit 0 "freeze a protocol for the run without namespaces" -- "$PREREG" freeze "$work/p/isolation/protocol_none.yaml" --no-dry-run
  hash=$(tail -n 1 "$work/out")
  expect_exit 0 "without user namespaces the run still works" -- unshare -Ur sh -c \
    'echo 0 >/proc/sys/user/max_user_namespaces && exec "$0" run "$1" --out "$2" --quiet' "$PREREG" "$hash" "$out"
  dir=$(tail -n 1 "$work/out")
  expect_exit 0 "its report audits clean" -- "$PREREG" audit "$dir"
  grep -q "^| isolation | none: user and mount namespaces are not available (unshare): " "$dir/report.md" \
    && pass "report.md says isolation: none with the reason" || fail "report.md: $(grep isolation "$dir/report.md")"
  grep -q "measuring process isolation: none (user and mount namespaces are not available" "$work/out" \
    && pass "the audit shows it" || fail "audit: $(grep pages "$work/out")"
else
  echo "note: unshare -Ur is refused here; the run without namespaces is not tried"
fi
finish
