#!/usr/bin/env bash
# Family 5 (issue 43): the ledger's verified-prefix cache. A Python arm in the measuring
# process reads the ledger, forges it (the first run's completion relabelled as an abort, which
# breaks that entry's signature) and plants a cache entry that says the forged lines were
# verified. Then someone who can write the store but holds no key puts the forged ledger in
# place. `prereg ledger verify` must refuse it: an entry prereg did not write is never trusted.
source "$SRC/tests/attacks/lib.sh"
plant_key
attack_config "$KEY"
cat >"$P/arm.py" <<'PY'
import hashlib, json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import escape

def _plant():
    c = escape.config()
    ledger = os.path.join(c["store"], "ledger.jsonl")
    lines = open(ledger, "rb").read().splitlines(keepends=True)
    done = [i for i, l in enumerate(lines) if b'"event":"run-complete"' in l]
    if not done:
        return {"plant": "no completed run yet"}
    n = done[0] + 1
    forged = lines[:n - 1] + [lines[n - 1].replace(b'"event":"run-complete"', b'"event":"run-aborted"')]
    text = b"".join(forged)
    signers = sorted({json.loads(l)["signer"] for l in forged})
    entry = {"lines": n, "sha256": hashlib.sha256(text).hexdigest(), "signers": signers}
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(c["home"], ".cache")
    folder = os.path.join(home, "prereg", "verified")
    name = hashlib.sha256(os.path.normpath(os.path.abspath(ledger)).encode()).hexdigest() + ".json"
    out = {"lines": n}
    try:
        os.makedirs(folder, exist_ok=True)
        # every name a cache of this ledger could have: the one prereg uses today, and one per
        # file in the folder (a later format may name it otherwise)
        names = {name} | {f for f in os.listdir(folder) if f.endswith(".json")}
        for f in names:
            with open(os.path.join(folder, f), "w") as fh:
                json.dump(entry, fh, separators=(",", ":"), sort_keys=True)
        out["planted"] = sorted(names)
    except OSError as e:
        out["planted"] = "refused " + str(e)
    with open(os.path.join(c["loot"], "forged.jsonl"), "wb") as fh:
        fh.write(text)
    for l in text.decode("utf-8").splitlines():  # also on stderr (escape.py, loot_line)
        escape.loot_line("forged.jsonl", l)
    return out

def attack(t):
    escape.loot("python", {"plant": _plant()})
    return escape.layernorm_step(t)
PY
protocol "$P/p.yaml" attack_cache_prefix "  - id: attacker
    python: arm.py
    function: attack"
run_prereg freeze "$P/p.yaml" --no-dry-run # the run is under test (its attacker is no correct arm)
[ "$rc" -eq 0 ] || escape "freeze failed (exit $rc): $(head -n 1 "$WORK/err")"
hash=$(tail -n 1 "$WORK/out")
for n in 1 2; do # the first run completes; the second one's arm forges the ledger up to it
  run_prereg run "$hash" --out "$REPORTS" --quiet
  [ "$rc" -eq 0 ] || escape "run $n failed (exit $rc): $(head -n 1 "$WORK/err")"
done
if [ -s "$LOOT/forged.jsonl" ]; then
  cp "$LOOT/forged.jsonl" "$PREREG_STORE/ledger.jsonl" # someone who can write the store, no key
  run_prereg ledger verify
  [ "$rc" -ne 0 ] || escape "a forged ledger (a completed run relabelled as aborted) verified thanks to a planted cache entry"
fi
check_no_key
check_loot_has '"lines"'
verdict
