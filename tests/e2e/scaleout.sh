# End-to-end: export/import between two stores, 3 shards + merge, a missing shard refused with
# its cells named then completed by a rerun, run --devices, and a replication merge (majority)
# of three CPU reports; every merged report audits clean (docs/scale-out.md).
source "$(dirname "$0")/lib.bash"
src=$PREREG_SOURCE_DIR/tests/data/protocols/cpu_shards.yaml
out=$work/reports

expect_exit 0 "freeze cpu_shards" -- "$PREREG" freeze "$src"
hash=$(tail -n 1 "$work/out")

# Export from store A, import into store B (its own key); the import is ledgered there.
expect_exit 0 "export" -- "$PREREG" export "$hash"
cp "$work/out" "$work/bundle.json"
B=(--store "$work/storeB" --key "$work/keyB/signing.key")
expect_exit 0 "import into a second store" -- "$PREREG" import "$work/bundle.json" "${B[@]}"
[ "$(tail -n 1 "$work/out")" = "$hash" ] && pass "import prints the same hash" || fail "import hash"
grep -q '"event":"import"' "$work/storeB/ledger.jsonl" && pass "import entry in B's ledger" || fail "no import entry"
expect_exit 0 "import again is idempotent" -- "$PREREG" import "$work/bundle.json" "${B[@]}"
grep -q "already in this store" "$work/out" && pass "second import writes nothing" || fail "second import"
expect_exit 0 "run the imported hash in B" -- "$PREREG" run "$hash" "${B[@]}" --out "$work/reportsB" --quiet
dirB=$(tail -n 1 "$work/out")
expect_exit 0 "audit the run in B" -- "$PREREG" audit --store "$work/storeB" "$dirB"
# A tampered bundle (source changed) is refused with exit 3; a bundle whose signer B does not
# pin is refused with exit 3.
python3 - "$work/bundle.json" "$work/tampered.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1])); b["source"] += "# changed\n"
json.dump(b, open(sys.argv[2], "w"))
PY
expect_exit 3 "tampered bundle refused" -- "$PREREG" import "$work/tampered.json" --store "$work/storeC" --key "$work/keyB/signing.key"
expect_err "source does not match" "tampered bundle: names the source"
fpB=$(ls "$work/storeB/keys" | grep -v "$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["freeze"]["signer"])' "$work/bundle.json")" | head -1)
mkdir -p "$work/storeD" && printf '{"trusted_keys": ["%s"]}' "${fpB%.pub}" > "$work/storeD/trust.json"
cp -r "$work/storeB/keys" "$work/storeD/keys"
rm -f "$work/storeD/keys/$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["freeze"]["signer"])' "$work/bundle.json").pub"
expect_exit 3 "signer not pinned by trust.json: refused" -- "$PREREG" import "$work/bundle.json" --store "$work/storeD" --key "$work/keyB/signing.key"
expect_err "is not pinned" "unpinned signer named"

# Three shards; merging two refuses (exit 3) naming the missing cells; the rerun completes it.
for k in 1 2 3; do
  expect_exit 0 "run shard $k/3" -- "$PREREG" run "$hash" --shard "$k/3" --out "$out" --quiet
  tail -n 1 "$work/out" > "$work/shard$k"
done
grep -q '"shard":"2/3"' "$PREREG_STORE/ledger.jsonl" && pass "ledger entries carry K/N" || fail "no K/N in the ledger"
expect_exit 0 "audit a shard" -- "$PREREG" audit "$(cat "$work/shard2")"
expect_exit 3 "merge without shard 2 refused" -- "$PREREG" merge "$(cat "$work/shard1")" "$(cat "$work/shard3")" --out "$out"
expect_err "shard\(s\) 2/3 missing.*unfused fwd 16x256, fused fwd 16x256" "the refusal names the missing cells"
expect_exit 3 "a shard given twice refused" -- "$PREREG" merge "$(cat "$work/shard1")" "$(cat "$work/shard1")" "$(cat "$work/shard3")" --out "$out"
# A killed shard: its run is aborted in the ledger and leaves no report; the rerun completes it.
"$PREREG" run "$hash" --shard 2/3 --out "$out" --quiet >/dev/null 2>&1 &
pid=$!; sleep 0.3; kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
expect_exit 0 "rerun shard 2/3" -- "$PREREG" run "$hash" --shard 2/3 --out "$out" --quiet
tail -n 1 "$work/out" > "$work/shard2"
expect_exit 0 "merge the three shards" -- "$PREREG" merge "$(cat "$work/shard1")" "$(cat "$work/shard2")" "$(cat "$work/shard3")" --out "$out"
merged=$(tail -n 1 "$work/out")
expect_exit 0 "audit the merged report" -- "$PREREG" audit "$merged"
grep -q "PASS parts: 3 part(s)" "$work/out" && pass "the audit re-audits every part" || fail "parts check"
[ "$(find "$merged/parts" -name report.json | wc -l)" -eq 3 ] && pass "the merged report keeps its parts" || fail "parts not kept"
python3 - "$merged/report.json" <<'PY' && pass "merged cells are the union in plan order" || fail "merged cells"
import json, sys
r = json.load(open(sys.argv[1]))
keys = [(c["arm"], c["rows"]) for c in r["cells"]]
assert keys == [(a, n) for a in ["unfused", "fused"] for n in [1, 16, 64]], keys
assert r["kind"] == "shards" and len(r["parts"]) == 3
PY
# Tampering with a kept part fails the merged audit.
cp -r "$merged" "$work/tampered_merge"
part=$(find "$work/tampered_merge/parts" -name report.md | head -1)
echo x >> "$part"
expect_exit 4 "a tampered part fails the merged audit" -- "$PREREG" audit "$work/tampered_merge"

# run --devices on one host (the CPU ignores the ordinal): three shard processes, merged.
expect_exit 0 "run --devices 0,0,0" -- "$PREREG" run "$hash" --devices 0,0,0 --out "$out" --quiet
expect_exit 0 "audit the --devices merge" -- "$PREREG" audit "$(tail -n 1 "$work/out")"

# Replication: three complete reports, rule majority.
for i in 1 2 3; do
  expect_exit 0 "complete run $i" -- "$PREREG" run "$hash" --out "$out" --quiet
  tail -n 1 "$work/out" > "$work/full$i"
done
expect_exit 3 "replication of two reports refused" -- "$PREREG" merge --replication "$(cat "$work/full1")" "$(cat "$work/full2")" --out "$out"
expect_exit 3 "a shard in a replication refused" -- "$PREREG" merge --replication "$(cat "$work/full1")" "$(cat "$work/full2")" "$(cat "$work/shard1")" --out "$out"
expect_exit 0 "replication merge" -- "$PREREG" merge --replication "$(cat "$work/full1")" "$(cat "$work/full2")" "$(cat "$work/full3")" --out "$out"
rep=$(tail -n 1 "$work/out")
expect_exit 0 "audit the replication report" -- "$PREREG" audit "$rep"
grep -q "## Per device" "$rep/report.md" && grep -q "Per device" "$rep/report.html" && pass "pages show the per-device table" || fail "per-device table"
python3 - "$rep/report.json" <<'PY' && pass "pooled verdicts follow the majority rule" || fail "pooled verdicts"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["replication"] == {"devices": 3, "rule": "majority", "threshold": 2}
for i, p in enumerate(r["predictions"]):
    vs = [d["verdicts"][i]["verdict"] for d in r["parts"]]
    c, f = vs.count("confirmed"), vs.count("refuted")
    want = "confirmed" if c >= 2 else "refuted" if f > 1 else "inconclusive"
    assert p["verdict"] == want, (p, vs)
for d in r["parts"]:
    assert "ceiling_gbps" in d and "launch_floor_ms" in d
PY

# The slurm script names every shard and the dependent merge.
expect_exit 0 "slurm script" -- "$PREREG" slurm "$hash" --shards 3 --partition debug --work "$work/slurm"
grep -q -- "--array=1-\$N" "$work/out" && grep -q -- "--dependency=afterok:\$array" "$work/out" \
  && grep -q -- "--partition=debug" "$work/out" && ! grep -q -- "--gpus-per-task" "$work/out" \
  && pass "sbatch array, afterok merge, partition; no GPU for a cpu protocol" || fail "slurm script"
bash -n "$work/out" && pass "the script parses" || fail "the script does not parse"
expect_exit 2 "more shards than shape groups" -- "$PREREG" slurm "$hash" --shards 4
finish
