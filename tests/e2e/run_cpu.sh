# End-to-end: freeze and run the shipped CPU protocol twice, check the signed report with the
# openssl CLI and python3, and check every refusal writes no report.
source "$(dirname "$0")/lib.bash"
command -v openssl >/dev/null && command -v python3 >/dev/null || { echo "needs openssl and python3"; exit 1; }
src=$PREREG_SOURCE_DIR/protocols/cpu_smoke.yaml
out=$work/reports
count_reports() { find "$out" -name report.json 2>/dev/null | wc -l; }

expect_exit 0 "freeze cpu_smoke" -- "$PREREG" freeze "$src"
hash=$(tail -n 1 "$work/out")
expect_exit 0 "run by hash" -- "$PREREG" run "$hash" --out "$out" --quiet
dir=$(tail -n 1 "$work/out")
[[ "$dir" =~ /cpu_smoke/[0-9]{8}T[0-9]{6}Z-${hash:0:12}-[0-9a-f]{6}$ ]] && pass "report folder name" || fail "report folder $dir"
for f in report.json report.dsse.json report.md report.html; do
  [ -s "$dir/$f" ] && pass "$f written" || fail "$f missing"
done
[ -z "$(find "$out" -name '*.partial' -o -name '*.tmp.*')" ] && pass "no partial files" || fail "partial files left"

# The DSSE envelope verifies with the openssl CLI over a PAE built here.
python3 - "$dir" "$work" <<'PY' && pass "payload = report.json; PAE and signature extracted" || fail "envelope parse"
import base64, json, sys
d, w = sys.argv[1], sys.argv[2]
env = json.load(open(d + "/report.dsse.json"))
payload = base64.b64decode(env["payload"], validate=True)
assert payload == open(d + "/report.json", "rb").read(), "payload differs from report.json"
t = env["payloadType"].encode()
assert t == b"application/vnd.prereg.report+json"
pae = b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)
open(w + "/pae.bin", "wb").write(pae)
sig = env["signatures"][0]
open(w + "/sig.bin", "wb").write(base64.b64decode(sig["sig"], validate=True))
open(w + "/keyid", "w").write(sig["keyid"])
PY
pub="$PREREG_STORE/keys/$(cat "$work/keyid").pub"
openssl pkeyutl -verify -pubin -inkey "$pub" -rawin -in "$work/pae.bin" -sigfile "$work/sig.bin" >/dev/null 2>&1 \
  && pass "openssl CLI verifies the envelope" || fail "openssl CLI rejects the envelope"
printf 'X' >> "$work/pae.bin"
openssl pkeyutl -verify -pubin -inkey "$pub" -rawin -in "$work/pae.bin" -sigfile "$work/sig.bin" >/dev/null 2>&1 \
  && fail "openssl accepts a changed PAE" || pass "openssl rejects a changed PAE"

# Every cell's median_ms is the median (R-7) of its samples_ms; every contract field is there.
python3 - "$dir/report.json" <<'PY' && pass "medians and report fields" || fail "medians or report fields"
import json, sys
r = json.load(open(sys.argv[1]))
for k in ["schema_version", "tool", "protocol", "environment", "instrument", "cells", "correctness",
          "predictions", "defects", "deviations", "attempt"]:
    assert k in r, k
for k in ["ceiling_gbps", "launch_floor_ms", "timer_resolution_ms", "flush_bytes", "flush_method"]:
    assert k in r["instrument"], k
assert r["instrument"]["flush_method"] == "read-sweep"
assert r["attempt"] == 1
assert len(r["cells"]) == 2 * 2 * 2
for c in r["cells"]:
    x = sorted(c["samples_ms"]); n = len(x)
    assert n == 15, n
    h = (n - 1) * 0.5; lo = int(h)
    med = x[lo] if h == lo else x[lo] + (h - lo) * (x[lo + 1] - x[lo])
    assert med == c["median_ms"], (c["arm"], med, c["median_ms"])
    for k in ["q1_ms", "q3_ms", "iqr_ms", "mean_ms", "peak_bytes", "gbps", "pct_ceiling", "bound", "flags"]:
        assert k in c, k
for p in r["predictions"]:
    assert p["verdict"] in ("confirmed", "refuted", "inconclusive")
PY

expect_exit 0 "second run" -- "$PREREG" run "$hash" --out "$out" --quiet
dir2=$(tail -n 1 "$work/out")
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['attempt'] == 2" "$dir2/report.json" \
  && pass "second run reports attempt 2" || fail "second run attempt"
[ "$(grep -c '"event":"run-complete"' "$PREREG_STORE/ledger.jsonl")" -eq 2 ] && pass "two run-complete entries" || fail "run-complete entries"
expect_exit 0 "ledger verify after runs" -- "$PREREG" ledger verify

# Refusals: exit 3 (integrity) before any measurement, no report written.
before=$(count_reports)
# (A file that differs from a frozen one only in comments or formatting is that protocol and
# runs: tests/e2e/newcomer.sh.)
sed 's/repetitions: 15/repetitions: 16/' "$src" > "$work/changed.yaml"
expect_exit 3 "modified file refused" -- "$PREREG" run "$work/changed.yaml" --out "$out"
expect_err "measurement.repetitions.*frozen as ${hash}" "names the changed field and the frozen hash"
sed 's/^id: cpu_smoke/id: never_frozen/' "$src" > "$work/unfrozen.yaml"
expect_exit 3 "unfrozen file refused" -- "$PREREG" run "$work/unfrozen.yaml" --out "$out"
expect_err "not frozen" "says it is not frozen"
expect_exit 3 "unknown hash refused" -- "$PREREG" run "0123456789abcdef" --out "$out"
cp "$PREREG_STORE/protocols/$hash/protocol.json" "$work/protocol.bak"
sed -i 's/"repetitions":15/"repetitions":14/' "$PREREG_STORE/protocols/$hash/protocol.json"
expect_exit 3 "tampered stored copy refused" -- "$PREREG" run "$hash" --out "$out"
expect_err "corrupted" "says the stored copy is corrupted"
cp "$work/protocol.bak" "$PREREG_STORE/protocols/$hash/protocol.json"
[ "$(count_reports)" -eq "$before" ] && pass "refusals wrote no report" || fail "a refusal wrote a report"

# A device: cuda protocol where no GPU is usable: exit 5, one line, no run recorded.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  sed -e 's/^device: cpu/device: cuda/' -e 's/^id: cpu_smoke/id: cuda_smoke/' "$src" > "$work/cuda.yaml"
  expect_exit 0 "freeze a CUDA protocol without a GPU" -- "$PREREG" freeze "$work/cuda.yaml"
  starts=$(grep -c '"event":"run-start"' "$PREREG_STORE/ledger.jsonl")
  expect_exit 5 "CUDA protocol without a usable GPU" -- "$PREREG" run "$work/cuda.yaml" --out "$out"
  [ "$(wc -l < "$work/err")" -eq 1 ] && pass "one error line" || fail "more than one error line"
  [ "$(grep -c '"event":"run-start"' "$PREREG_STORE/ledger.jsonl")" -eq "$starts" ] && pass "no run recorded" || fail "exit-5 run was recorded"
fi

# Waits until the ledger holds one more run-start than $starts, then 2 s more (about when the
# fixed sleeps of before signalled): a signal is sent to a run under way, not at a fixed time
# that a busy machine may not have reached.
wait_run_start() {
  for _ in $(seq 300); do
    [ "$(grep -c '"event":"run-start"' "$PREREG_STORE/ledger.jsonl")" -gt "$starts" ] && break
    sleep 0.1
  done
  sleep 2
}

# SIGINT: the run ends with a run-aborted entry and leaves no report folder.
before=$(count_reports)
starts=$(grep -c '"event":"run-start"' "$PREREG_STORE/ledger.jsonl")
"$PREREG" run "$hash" --out "$out" --quiet >"$work/int.out" 2>"$work/int.err" &
pid=$!
wait_run_start
kill -INT $pid
wait $pid; rc=$?
[ "$rc" -ne 0 ] && pass "interrupted run exits non-zero ($rc)" || fail "interrupted run exited 0"
grep -q "interrupted by SIGINT" "$work/int.err" && pass "says it was interrupted" || fail "interrupt message: $(cat "$work/int.err")"
[ "$(count_reports)" -eq "$before" ] && pass "no report after SIGINT" || fail "report written after SIGINT"
tail -n 1 "$PREREG_STORE/ledger.jsonl" | grep -q '"event":"run-aborted"' && pass "run-aborted entry" || fail "no run-aborted entry"

# SIGKILL: the next run notices the vanished run and records it as aborted.
starts=$(grep -c '"event":"run-start"' "$PREREG_STORE/ledger.jsonl")
"$PREREG" run "$hash" --out "$out" --quiet >/dev/null 2>&1 &
pid=$!
wait_run_start
kill -KILL $pid; wait $pid 2>/dev/null
aborted=$(grep -c '"event":"run-aborted"' "$PREREG_STORE/ledger.jsonl")
sed 's/^id: cpu_smoke/id: tiny/; s/rows: \[64, 4096\]/rows: [64]/; s/rows: 4096, cols: 1024, pass: fwd/rows: 64, cols: 1024, pass: fwd/' "$src" > "$work/tiny.yaml"
expect_exit 0 "freeze tiny" -- "$PREREG" freeze "$work/tiny.yaml"
expect_exit 0 "next run" -- "$PREREG" run "$work/tiny.yaml" --out "$out" --quiet
[ "$(grep -c '"event":"run-aborted"' "$PREREG_STORE/ledger.jsonl")" -eq $((aborted + 1)) ] && pass "killed run recorded as aborted" || fail "killed run not noticed"
grep '"event":"run-aborted"' "$PREREG_STORE/ledger.jsonl" | tail -n 1 | grep -q vanished && pass "reason says vanished" || fail "reason"
expect_exit 0 "ledger verify at the end" -- "$PREREG" ledger verify

finish
