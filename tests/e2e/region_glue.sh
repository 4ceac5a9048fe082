#!/usr/bin/env bash
# prereg's Python glue for regions and the kernel clock's region marks, with a fake torch
# (tests/python/test_region_glue.py; no GPU, torch or prereg binary involved).
set -uo pipefail
: "${PREREG_SOURCE_DIR:?}"
exec /usr/bin/python3 "$PREREG_SOURCE_DIR/tests/python/test_region_glue.py"
