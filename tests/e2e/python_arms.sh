#!/usr/bin/env bash
# The shipped Python arms, the planted cheating arms and the Python examples against a float64
# reference through a fake `t` (tests/python/test_arms.py; no prereg binary involved). The torch
# cases are skipped inside it without torch; the whole test is skipped (77) without numpy.
set -uo pipefail
: "${PREREG_SOURCE_DIR:?}"
py=/usr/bin/python3
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: python3-numpy is not installed"; exit 77; }
exec "$py" "$PREREG_SOURCE_DIR/tests/python/test_arms.py"
