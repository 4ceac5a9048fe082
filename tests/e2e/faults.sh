# End-to-end faults: hostile files through the CLI (exit 2, one line; CRLF hashes like LF);
# the private key never leaves its file; two runs of one protocol at once;
# a full disk and a read-only store (exit 1 naming the path, nothing half-written); a truncated
# ledger (exit 3); a key file with the wrong mode or format (exit 3 saying how to fix it).
# The disk faults need tmpfs and bind mounts (root with CAP_SYS_ADMIN); without them those
# checks are skipped and, if all else passed, the script exits 77 (ctest: skipped).
source "$(dirname "$0")/lib.bash"
command -v openssl >/dev/null && command -v python3 >/dev/null || { echo "needs openssl and python3"; exit 1; }
tiny=$PREREG_SOURCE_DIR/tests/data/hostile/tiny_cpu.yaml
out=$work/reports
mounts=()
cleanup() {
  local m
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
mount_tmpfs() { mkdir -p "$1" && mount -t tmpfs -o "size=$2" tmpfs "$1" 2>/dev/null && mounts+=("$1"); }
mount_readonly() { # bind-mounts DIR onto itself, read-only
  mount --bind "$1" "$1" 2>/dev/null || return 1
  mounts+=("$1")
  mount -o remount,ro,bind "$1" 2>/dev/null
}
can_mount=1
mount_tmpfs "$work/probe" 64k && umount "$work/probe" || can_mount=0
one_error_line() { # the last command printed exactly one `prereg: error:` line and nothing else
  [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q '^prereg: error: ' "$work/err" \
    && pass "$1: one error line" || { fail "$1: stderr is not one error line"; head -3 "$work/err"; }
}
attempt_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["attempt"])' "$1/report.json"; }
count_reports() { find "$1" -name report.json 2>/dev/null | wc -l; }
no_temp_files() { # no temp file of an atomic write and no .partial report folder under DIR
  [ -z "$(find "$1" -name '*.tmp.*' -o -name '*.partial' 2>/dev/null)" ] && pass "$2: no temp files" \
    || fail "$2: temp files left: $(find "$1" -name '*.tmp.*' -o -name '*.partial')"
}
sed 's/^id: tiny_cpu/id: tiny_other/' "$tiny" >"$work/other.yaml"

# ---- hostile files through the CLI: exit 2, one error line, never a crash or a hang ----------
python3 - "$tiny" "$work" <<'PY'
import sys
tiny, w = open(sys.argv[1]).read(), sys.argv[2]
def put(name, text, mode="w"):
    open(w + "/" + name, mode).write(text)
put("deep.yaml", "[" * 100000 + "]" * 100000)
put("deep.json", "[" * 100000 + "]" * 100000)
put("deep_expect.yaml", tiny.replace('"fused <= 2 * unfused"', '"' + "(" * 100000 + "fused" + ")" * 100000 + ' <= unfused"'))
laughs = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
for i in range(1, 10):
    laughs += "a%d: &a%d [%s]\n" % (i, i, ", ".join(["*a%d" % (i - 1)] * 9))
put("laughs.yaml", laughs)
put("nul.yaml", tiny.replace("id: tiny_cpu", "id: tiny\0cpu"))
put("utf8.yaml", tiny.encode().replace(b"Tiny CPU", b"Tiny \xff CPU"), "wb")
put("huge.json", "[1e400]")
put("line.yaml", tiny.replace("device: cpu", "device: " + "x" * 900 * 1024))
put("years.yaml", tiny.replace("rows: [8]", "rows: [2147483648]").replace("cols: [64]", "cols: [65536]").replace("repetitions: 5", "repetitions: 100000"))
put("crlf.yaml", tiny.replace("\n", "\r\n"), "w")
PY
for f in deep.yaml deep_expect.yaml laughs.yaml nul.yaml utf8.yaml line.yaml years.yaml; do
  expect_exit 2 "check $f" -- "$PREREG" check "$work/$f"
  one_error_line "check $f"
  [ "$(wc -c <"$work/err")" -lt 1000 ] && pass "check $f: a short message" || fail "check $f: $(wc -c <"$work/err")-byte message"
done
expect_err "measuring would take at the very least 7.14 years" "years.yaml: refused with an estimate in time"
for f in deep.json huge.json; do
  expect_exit 2 "canon $f" -- "$PREREG" canon "$work/$f"
  one_error_line "canon $f"
done
[ ! -e "$PREREG_STORE" ] && pass "check and canon store nothing" || fail "check or canon created the store"
"$PREREG" check "$tiny" | tail -n 1 >"$work/lf.hash"
"$PREREG" check "$work/crlf.yaml" | tail -n 1 >"$work/crlf.hash"
grep -q $'\r' "$work/crlf.yaml" && cmp -s "$work/lf.hash" "$work/crlf.hash" && [ -s "$work/lf.hash" ] \
  && pass "CRLF file: prereg check prints the LF file's hash" || fail "CRLF hash differs"
"$PREREG" canon "$tiny" >"$work/lf.canon"
"$PREREG" canon "$work/crlf.yaml" >"$work/crlf.canon"
cmp -s "$work/lf.canon" "$work/crlf.canon" && [ -s "$work/lf.canon" ] \
  && pass "CRLF file: prereg canon prints the LF file's bytes" || fail "CRLF canonical bytes differ"

# ---- the private key never goes into the store, a report or a log ------------------------
mkdir -p "$work/logs"
"$PREREG" freeze "$tiny" >"$work/logs/freeze.out" 2>"$work/logs/freeze.err"
hash=$(tail -n 1 "$work/logs/freeze.out")
[[ "$hash" =~ ^[0-9a-f]{64}$ ]] && pass "freeze the tiny protocol" || { fail "freeze: $(cat "$work/logs/freeze.err")"; finish; }
"$PREREG" run "$hash" --out "$out" --quiet >"$work/logs/run.out" 2>"$work/logs/run.err" \
  && pass "run the tiny protocol" || fail "run: $(cat "$work/logs/run.err")"
first=$(tail -n 1 "$work/logs/run.out")
"$PREREG" audit "$first" >"$work/logs/audit.out" 2>&1 && pass "its report audits clean" || fail "audit: $(tail -n 3 "$work/logs/audit.out")"
[ "$(stat -c %a "$PREREG_KEY")" = 600 ] && pass "the key file is mode 600" || fail "key mode $(stat -c %a "$PREREG_KEY")"
seed_b64=$(openssl pkey -in "$PREREG_KEY" -outform DER 2>/dev/null | tail -c 32 | base64 -w0)
seed_hex=$(openssl pkey -in "$PREREG_KEY" -outform DER 2>/dev/null | tail -c 32 | od -An -tx1 | tr -d ' \n')
seed_b64url=$(printf '%s' "$seed_b64" | tr '+/' '-_' | tr -d '=')
pem_body=$(sed -n 2p "$PREREG_KEY")
[ ${#seed_b64} -eq 44 ] && [ ${#seed_hex} -eq 64 ] && pass "raw private key extracted with openssl" || fail "cannot extract the raw key"
leaks=0
for needle in "PRIVATE KEY" "$seed_b64" "${seed_b64%=}" "$seed_b64url" "$seed_hex" "$pem_body"; do
  if grep -rqiF -- "$needle" "$PREREG_STORE" "$out" "$work/logs"; then
    leaks=1; fail "private key material found: $(grep -rliF -- "$needle" "$PREREG_STORE" "$out" "$work/logs" | head -3)"
  fi
done
[ $leaks -eq 0 ] && pass "no private key (PEM, raw base64, base64url or hex) in the store, the reports or the logs"
[ -z "$(find "$PREREG_STORE" -name '*.key')" ] && pass "no key file in the store" || fail "a .key file in the store"

# ---- two runs of the same protocol at once -------------------------------------------------
"$PREREG" run "$hash" --out "$out" --quiet >"$work/c1.out" 2>"$work/c1.err" &
p1=$!
"$PREREG" run "$hash" --out "$out" --quiet >"$work/c2.out" 2>"$work/c2.err" &
p2=$!
wait $p1; rc1=$?
wait $p2; rc2=$?
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && pass "two concurrent runs both complete" \
  || fail "concurrent runs exit $rc1 and $rc2: $(cat "$work/c1.err" "$work/c2.err")"
d1=$(tail -n 1 "$work/c1.out"); d2=$(tail -n 1 "$work/c2.out")
[ -n "$d1" ] && [ "$d1" != "$d2" ] && pass "distinct report folders" || fail "report folders '$d1' and '$d2'"
attempts=$( (attempt_of "$d1"; attempt_of "$d2") | sort -n | tr '\n' ' ')
[ "$attempts" = "2 3 " ] && pass "distinct attempt numbers 2 and 3" || fail "attempts: $attempts"
expect_exit 0 "ledger verifies after concurrent runs" -- "$PREREG" ledger verify
[ "$(grep -c '"event":"run-complete"' "$PREREG_STORE/ledger.jsonl")" -eq 3 ] && pass "three run-complete entries" || fail "run-complete entries"
expect_exit 0 "a concurrent run's report audits clean" -- "$PREREG" audit "$d2"

# ---- a half-written ledger line ------------------------------------------------------------
cp -a "$PREREG_STORE" "$work/trunc"
truncate -s -20 "$work/trunc/ledger.jsonl"
before=$(count_reports "$out")
expect_exit 3 "truncated ledger: ledger verify refuses" -- "$PREREG" ledger verify --store "$work/trunc"
expect_err "ledger line [0-9]+ has no final newline.*ledger.jsonl" "names the line and the ledger"
one_error_line "truncated ledger"
expect_exit 3 "truncated ledger: freeze refuses" -- "$PREREG" freeze --store "$work/trunc" "$work/other.yaml"
expect_exit 3 "truncated ledger: run refuses" -- "$PREREG" run --store "$work/trunc" "$hash" --out "$out" --quiet
[ "$(count_reports "$out")" -eq "$before" ] && pass "no report from a truncated ledger" || fail "a report was written"
[ "$(ls "$work/trunc/protocols" | wc -l)" -eq 1 ] && pass "the refused freeze stored nothing" || fail "a protocol was stored"

# ---- key files with the wrong mode or format ------------------------------------------------
cp "$PREREG_KEY" "$work/open.key"; chmod 644 "$work/open.key"
expect_exit 3 "a key readable by others is refused" -- "$PREREG" freeze --key "$work/open.key" "$work/other.yaml"
expect_err "accessible by group or others.*fix with: chmod 600 $work/open.key" "says chmod 600"
one_error_line "key mode"
printf 'not a key\n' >"$work/garbage.key"; chmod 600 "$work/garbage.key"
expect_exit 3 "a key file that is no PEM is refused" -- "$PREREG" freeze --key "$work/garbage.key" "$work/other.yaml"
expect_err "not an Ed25519 PKCS#8 private key.*prereg keygen --force --key $work/garbage.key" "says how to make a key"
one_error_line "key format"
cp "$PREREG_SOURCE_DIR/tests/data/crypto/rsa.key" "$work/rsa.key"; chmod 600 "$work/rsa.key"
expect_exit 3 "an RSA key is refused" -- "$PREREG" run --key "$work/rsa.key" "$hash" --out "$out" --quiet
expect_err "key type is RSA" "names the key type"
cp "$PREREG_STORE/keys/"*.pub "$work/public.key"; chmod 600 "$work/public.key"
expect_exit 3 "a public key given as the signing key is refused" -- "$PREREG" freeze --key "$work/public.key" "$work/other.yaml"
expect_err "'PUBLIC KEY', not 'PRIVATE KEY'" "says it is a public key"
[ "$(count_reports "$out")" -eq "$before" ] && pass "refused keys wrote no report" || fail "a report was written"

# ---- a full disk and a read-only store (need mounts) ---------------------------------------
if [ $can_mount -eq 1 ]; then
  # Reports on a full disk: exit 1 naming the path, no report folder, the run recorded as aborted.
  mount_tmpfs "$work/fullout" 64k
  dd if=/dev/zero of="$work/fullout/fill" bs=4k 2>/dev/null
  expect_exit 1 "run with a full report disk" -- "$PREREG" run "$hash" --out "$work/fullout" --quiet
  expect_err "No space left on device \($work/fullout/" "names the path"
  one_error_line "full report disk"
  [ "$(count_reports "$work/fullout")" -eq 0 ] && pass "no report on the full disk" || fail "a report on the full disk"
  no_temp_files "$work/fullout" "full report disk"
  tail -n 1 "$PREREG_STORE/ledger.jsonl" | grep -q '"event":"run-aborted".*No space left' \
    && pass "the ledger records the run as aborted, with the reason" || fail "no run-aborted entry"
  expect_exit 0 "ledger verifies after the failed run" -- "$PREREG" ledger verify
  # The same with stderr itself unwritable (/dev/full) and a closed pipe: exit 1, never an
  # abort signal (134) or SIGPIPE (141), and the run still recorded as aborted.
  "$PREREG" run "$hash" --out "$work/fullout" --quiet >/dev/null 2>/dev/full
  rc=$?
  [ $rc -eq 1 ] && pass "a full report disk with stderr on a full disk: exit 1" || fail "stderr on /dev/full: exit $rc"
  tail -n 1 "$PREREG_STORE/ledger.jsonl" | grep -q '"event":"run-aborted".*No space left' \
    && pass "stderr on a full disk: the run is recorded as aborted" || fail "stderr on /dev/full: no run-aborted entry"
  ( exec 2>&-; exec "$PREREG" run "$hash" --out "$work/fullout" --quiet >/dev/null )
  rc=$?
  [ $rc -eq 1 ] && pass "a full report disk with stderr closed: exit 1" || fail "stderr closed: exit $rc"
  "$PREREG" run "$hash" --out "$work/fullout" --quiet 2>&1 >/dev/null | true
  rc=${PIPESTATUS[0]}
  [ $rc -eq 1 ] && pass "a full report disk with stderr a pipe closed early: exit 1" || fail "stderr a closed pipe: exit $rc"

  # The store on a full disk, filled to leave 0..4 free pages: a freeze either completes or
  # fails with exit 1 naming the path and leaves the store exactly as it was.
  for free in 0 1 2 3 4; do
    mount_tmpfs "$work/full$free" 64k
    store=$work/full$free/store
    "$PREREG" freeze --store "$store" "$tiny" >/dev/null 2>&1
    pages=$(($(stat -f -c %a "$work/full$free") - free))
    [ $pages -gt 0 ] && dd if=/dev/zero of="$work/full$free/fill" bs=4k count=$pages 2>/dev/null
    snapshot=$(cd "$store" && find . -type f ! -name lock -exec sha256sum {} + | sort)
    "$PREREG" freeze --store "$store" "$work/other.yaml" >"$work/out" 2>"$work/err"
    rc=$?
    if [ $rc -eq 1 ]; then
      expect_err "No space left on device \($store/" "full store ($free free pages): exit 1 names the path"
      one_error_line "full store ($free free pages)"
      [ "$(cd "$store" && find . -type f ! -name lock -exec sha256sum {} + | sort)" = "$snapshot" ] \
        && pass "full store ($free free pages): the store is as it was" \
        || fail "full store ($free free pages): the store changed: $(cd "$store" && find . -newer "$work/other.yaml" -type f)"
    elif [ $rc -eq 0 ]; then
      "$PREREG" list --store "$store" | grep -q tiny_other && pass "full store ($free free pages): the freeze fit and is listed" \
        || fail "full store ($free free pages): exit 0 but not listed"
    else
      fail "full store ($free free pages): exit $rc: $(cat "$work/err")"
    fi
    no_temp_files "$store" "full store ($free free pages)"
    "$PREREG" ledger verify --store "$store" >/dev/null 2>&1 && pass "full store ($free free pages): ledger verifies" \
      || fail "full store ($free free pages): ledger does not verify"
  done

  # A read-only store (root ignores chmod, so a read-only bind mount).
  cp -a "$PREREG_STORE" "$work/ro"
  rm -f "$work/ro/lock"
  if mount_readonly "$work/ro"; then
    ledger_sum=$(sha256sum <"$work/ro/ledger.jsonl")
    before=$(count_reports "$out")
    expect_exit 1 "freeze into a read-only store" -- "$PREREG" freeze --store "$work/ro" "$work/other.yaml"
    expect_err "Read-only file system \($work/ro/" "names the path"
    one_error_line "read-only store (freeze)"
    expect_exit 1 "run from a read-only store" -- "$PREREG" run --store "$work/ro" "$hash" --out "$out" --quiet
    expect_err "Read-only file system \($work/ro/" "names the path"
    one_error_line "read-only store (run)"
    [ "$(count_reports "$out")" -eq "$before" ] && pass "no report from a read-only store" || fail "a report was written"
    no_temp_files "$out" "read-only store"
    expect_exit 0 "ledger verify reads a read-only store" -- "$PREREG" ledger verify --store "$work/ro"
    [ "$(sha256sum <"$work/ro/ledger.jsonl")" = "$ledger_sum" ] && pass "the read-only ledger is unchanged" || fail "ledger changed"
  else
    fail "cannot bind-mount a folder read-only although tmpfs mounts work"
  fi
else
  echo "skipped: cannot mount tmpfs here (needs root with CAP_SYS_ADMIN): no full-disk or read-only store checks"
fi

if [ "$failures" -eq 0 ] && [ $can_mount -eq 0 ]; then
  echo "all other checks passed; the disk checks were skipped"
  exit 77
fi
finish
