"""Transcribe ledger events from a diverged copy of a store into the store's ledger.

Used once, 2026-12-01: two H200 runs were made in two device calls that each started from a
fresh copy of the committed store, so the second call's ledger did not contain the first
call's run-start and run-complete. This appends those two events (their members unchanged;
`seq`, `time`, `prev`, `signer` and the signature new, as docs/store.md defines an append) to
the ledger that has the second call's events, signed with the project key, so that every run
that happened is recorded. Usage:
  /usr/bin/python3 tools/gen/ledger_transcribe.py LEDGER KEY.pem SOURCE_LEDGER SEQ...
"""
import base64
import datetime
import hashlib
import json
import subprocess
import sys
import tempfile


def jcs(obj):
    # RFC 8785 for these objects: ASCII keys sorted, integers and strings only.
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def fingerprint(key):
    der = subprocess.run(["openssl", "pkey", "-in", key, "-pubout", "-outform", "DER"],
                         check=True, capture_output=True).stdout
    return hashlib.sha256(der).hexdigest()  # SHA-256 of the SubjectPublicKeyInfo DER (docs/crypto.md)


def sign(key, data):
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        sig = subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", key, "-rawin", "-in", f.name],
                             check=True, capture_output=True).stdout
    return base64.b64encode(sig).decode()


def main():
    ledger, key, source, *seqs = sys.argv[1:]
    lines = open(ledger, "rb").read().split(b"\n")[:-1]
    src = [json.loads(l) for l in open(source, "rb").read().split(b"\n")[:-1]]
    fp = fingerprint(key)
    out = open(ledger, "ab")
    for s in map(int, seqs):
        e = {k: v for k, v in src[s - 1].items() if k not in ("seq", "time", "prev", "signer", "signature")}
        e["seq"] = len(lines) + 1
        e["time"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        e["prev"] = hashlib.sha256(lines[-1]).hexdigest()
        e["signer"] = fp
        e["signature"] = {"keyid": fp, "sig": sign(key, jcs(e))}
        line = jcs(e)
        out.write(line + b"\n")
        lines.append(line)
        print("appended", e["event"], e.get("run_id"), "as seq", e["seq"])


if __name__ == "__main__":
    main()
