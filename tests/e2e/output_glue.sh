#!/usr/bin/env bash
# prereg's check of what a Python step returns (tests/python/test_output_glue.py: exact numpy
# arrays and torch tensors only, checked by type; no prereg binary involved). Skipped (77)
# without numpy.
set -uo pipefail
: "${PREREG_SOURCE_DIR:?}"
/usr/bin/python3 -c "import numpy" 2>/dev/null || { echo "skip: no numpy"; exit 77; }
exec /usr/bin/python3 "$PREREG_SOURCE_DIR/tests/python/test_output_glue.py"
