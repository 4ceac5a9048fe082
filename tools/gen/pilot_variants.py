#!/usr/bin/env python3
"""Writes pilot copies of protocols (exploratory `try` inputs, never frozen) with fewer samples:
the pilot's purpose is each arm's correctness errors and failures (the gate and the spot checks
do not depend on the sample count) and a first look at the times, at a fraction of the device
time of the protocol as written. Relative paths (operation and arm files) are rewritten for the
new folder; the id gets a `_pilot` suffix so a pilot can never be mistaken for the protocol.

  tools/gen/pilot_variants.py OUT_DIR PROTOCOL.yaml...   (repetitions 5, warmup 3)
"""
import os
import re
import sys


def variant(src, out_dir, reps=5, warmup=3):
    text = open(src, encoding="utf-8").read()
    src_dir = os.path.dirname(os.path.abspath(src))

    def rel(m):
        path = os.path.normpath(os.path.join(src_dir, m.group(2)))
        return m.group(1) + os.path.relpath(path, os.path.abspath(out_dir))

    text = re.sub(r"((?:python|file|plugin):\s*)(\.\.?/[^\s,}]+)", rel, text)
    text = re.sub(r"(?m)^(\s*repetitions:\s*)\d+", rf"\g<1>{reps}", text)
    text = re.sub(r"(?m)^(\s*warmup:\s*)\d+", rf"\g<1>{warmup}", text)
    text = re.sub(r"(?m)^(id:\s*)(\S+)", r"\g<1>\g<2>_pilot", text, count=1)
    head = (f"# PILOT COPY of {os.path.relpath(src)} written by tools/gen/pilot_variants.py "
            f"(repetitions {reps}, warmup {warmup}); exploratory, never frozen.\n")
    return head + text


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out_dir = argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for src in argv[2:]:
        dst = os.path.join(out_dir, os.path.basename(src))
        with open(dst, "w", encoding="utf-8") as f:
            f.write(variant(src, out_dir))
        print(dst)


if __name__ == "__main__":
    main(sys.argv)
