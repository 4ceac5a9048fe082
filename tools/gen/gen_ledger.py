#!/usr/bin/env python3
"""Appends N signed, chained run-start/run-complete pairs to a store's ledger (for measuring
ledger cost, docs/store.md): gen_ledger.py STORE KEY PROTOCOL_HASH N. Needs `cryptography`."""
import base64, hashlib, json, sys
from cryptography.hazmat.primitives import serialization

store, key_path, phash, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
key = serialization.load_pem_private_key(open(key_path, "rb").read(), password=None)
der = key.public_key().public_bytes(serialization.Encoding.DER,
                                    serialization.PublicFormat.SubjectPublicKeyInfo)
fp = hashlib.sha256(der).hexdigest()
jcs = lambda o: json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
path = store + "/ledger.jsonl"
lines = open(path).read().splitlines()
prev = hashlib.sha256(lines[-1].encode()).hexdigest() if lines else "0" * 64
attempt = sum(1 for l in lines if '"run-start"' in l and phash in l)
with open(path, "a") as out:
    for i in range(n):
        kind = "run-start" if i % 2 == 0 else "run-complete"
        if kind == "run-start":
            attempt += 1
        run_id = "20000101T000000Z-%s-%06x" % (phash[:12], attempt)
        e = {"event": kind, "protocol_hash": phash, "run_id": run_id, "attempt": attempt,
             "seq": len(lines) + 1, "time": "2000-01-01T00:00:00.000000Z", "prev": prev,
             "signer": fp}
        if kind == "run-start":
            e.update(pid=1, host="generated", device_name="none",
                     started_at="2000-01-01T00:00:00.000000Z")
        else:
            e["report_sha256"] = "0" * 64
        sig = key.sign(jcs(e).encode())
        e["signature"] = {"keyid": fp, "sig": base64.b64encode(sig).decode()}
        line = jcs(e)
        out.write(line + "\n")
        lines.append(line)
        prev = hashlib.sha256(line.encode()).hexdigest()
