# End-to-end: freeze, check, canon, list, show, keygen, ledger — through the built binary.
source "$(dirname "$0")/lib.bash"
src=$PREREG_SOURCE_DIR/protocols/cpu_smoke.yaml
cp "$src" "$work/p.yaml"

expect_exit 0 "freeze creates a key on first need and freezes" -- "$PREREG" freeze "$work/p.yaml"
hash=$(tail -n 1 "$work/out")
expect_err "created signing key .*signing.key \(fingerprint [0-9a-f]{64}\)" "first-need key notice"
[ "$(stat -c %a "$PREREG_KEY")" = 600 ] && pass "key mode 0600" || fail "key mode"
canon_hash=$("$PREREG" canon "$work/p.yaml" | sha256sum | cut -d' ' -f1)
[ "$hash" = "$canon_hash" ] && pass "freeze hash = sha256sum of canon" || fail "hash $hash != $canon_hash"
"$PREREG" canon "$work/p.yaml" | tail -c 1 | od -c | grep -q '\\n' && fail "canon ends with newline" || pass "canon has no trailing newline"

for f in protocol.json source.yaml freeze.json; do
  [ -f "$PREREG_STORE/protocols/$hash/$f" ] && pass "stored $f" || fail "missing $f"
done
cmp -s "$src" "$PREREG_STORE/protocols/$hash/source.yaml" && pass "source.yaml is byte-exact" || fail "source.yaml differs"
ls "$PREREG_STORE"/keys/*.pub >/dev/null 2>&1 && pass "public key in store" || fail "no public key in store"
grep -rq "PRIVATE KEY" "$PREREG_STORE" && fail "private key leaked into the store" || pass "no private key in the store"

expect_exit 0 "freeze is idempotent" -- "$PREREG" freeze "$work/p.yaml"
[ "$(tail -n 1 "$work/out")" = "$hash" ] && grep -q "already frozen" "$work/out" && pass "same hash, says so" || fail "idempotent freeze output"

# Cosmetic changes keep the hash: comments, key order, flow vs block, explicit defaults.
sed -e 's/^# CPU smoke.*/# a different comment/' "$src" > "$work/cosmetic.yaml"
cat >> "$work/cosmetic.yaml" <<'YAML'
analysis: {statistic: median, confidence: 0.95, bootstrap_resamples: 10000, unstable_iqr_ratio: 0.5}
YAML
expect_exit 0 "check of a cosmetic variant" -- "$PREREG" check "$work/cosmetic.yaml"
[ "$(tail -n 1 "$work/out")" = "$hash" ] && pass "cosmetic variant has the same hash" || fail "cosmetic variant changed the hash"
sed -e "s/repetitions: [0-9]*/repetitions: 99/" "$src" > "$work/changed.yaml"
expect_exit 0 "check of a changed value" -- "$PREREG" check "$work/changed.yaml"
[ "$(tail -n 1 "$work/out")" != "$hash" ] && pass "changed value changes the hash" || fail "changed value kept the hash"
[ ! -d "$PREREG_STORE/protocols/$(tail -n 1 "$work/out")" ] && pass "check stores nothing" || fail "check stored"

expect_exit 0 "list" -- "$PREREG" list
grep -q "$hash  cpu_smoke" "$work/out" && pass "list shows the protocol" || fail "list output"
expect_exit 0 "show by prefix" -- "$PREREG" show "${hash:0:10}"
grep -q "hypothesis:" "$work/out" && grep -q "frozen_at:" "$work/out" && pass "show output" || fail "show output"
expect_exit 2 "malformed prefix" -- "$PREREG" show "XYZ"
expect_exit 3 "unknown hash" -- "$PREREG" show "0000000000"

# Bad input: one line, file:line:column, exit 2.
printf 'prereg: 1\nid: x\nid: y\n' > "$work/dup.yaml"
expect_exit 2 "duplicate key" -- "$PREREG" check "$work/dup.yaml"
expect_err "^prereg: error: .*dup.yaml:3:1\)$" "error names file:line:column"
[ "$(wc -l < "$work/err")" -eq 1 ] && pass "error is one line" || fail "error is not one line"
expect_exit 2 "unknown command" -- "$PREREG" frezee
expect_err "did you mean 'freeze'" "suggests the closest command"

# canon of JSON files.
printf '{"b": 1.0, "a": [1e-7, 56.0, "\\u00e9"]}' > "$work/x.json"
expect_exit 0 "canon JSON" -- "$PREREG" canon "$work/x.json"
[ "$(cat "$work/out")" = '{"a":[1e-7,56,"é"],"b":1}' ] && pass "canonical bytes" || fail "canonical bytes: $(cat "$work/out")"
printf '{"a": 1, "a": 2}' > "$work/dup.json"
expect_exit 2 "canon rejects duplicate keys" -- "$PREREG" canon "$work/dup.json"

# The ledger: verify, then tamper.
expect_exit 0 "ledger verify" -- "$PREREG" ledger verify
grep -qE "^ok [0-9]+ entries$" "$work/out" && pass "ledger verify output" || fail "ledger verify output"
cp "$PREREG_STORE/ledger.jsonl" "$work/ledger.bak"
sed -i 's/"event":"freeze"/"event":"frozen"/' "$PREREG_STORE/ledger.jsonl"
expect_exit 3 "edited ledger entry" -- "$PREREG" ledger verify
expect_err "seq 1" "names the first bad seq"
cp "$work/ledger.bak" "$PREREG_STORE/ledger.jsonl"

# Key permissions: a group/other-readable key is refused with exit 3.
chmod 644 "$PREREG_KEY"
expect_exit 3 "group-readable key refused" -- "$PREREG" freeze "$work/changed.yaml"
expect_err "chmod 600" "says how to fix the key"
chmod 600 "$PREREG_KEY"

# Eight processes freezing at once: all stored, chain valid, seq unique.
for i in 1 2 3 4 5 6 7 8; do
  sed -e "s/^id: cpu_smoke/id: par$i/" "$src" > "$work/par$i.yaml"
done
for i in 1 2 3 4 5 6 7 8; do "$PREREG" freeze "$work/par$i.yaml" > "$work/par$i.out" 2>&1 & done
wait
stored=0
for i in 1 2 3 4 5 6 7 8; do
  h=$(tail -n 1 "$work/par$i.out"); [ -f "$PREREG_STORE/protocols/$h/freeze.json" ] && stored=$((stored + 1))
done
[ "$stored" -eq 8 ] && pass "8 concurrent freezes all stored" || fail "only $stored of 8 stored"
expect_exit 0 "ledger valid after concurrent freezes" -- "$PREREG" ledger verify
dups=$(grep -o '"seq":[0-9]*' "$PREREG_STORE/ledger.jsonl" | sort | uniq -d | wc -l)
[ "$dups" -eq 0 ] && pass "no duplicate seq" || fail "$dups duplicate seq"
[ "$(wc -l < "$PREREG_STORE/ledger.jsonl")" -eq 9 ] && pass "9 ledger entries" || fail "ledger has $(wc -l < "$PREREG_STORE/ledger.jsonl") entries"

finish
