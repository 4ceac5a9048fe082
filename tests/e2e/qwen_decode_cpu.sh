#!/usr/bin/env bash
# kernels/python/qwen_decode.py's arm logic on the CPU with a stand-in transformers
# (tests/python/test_qwen_decode.py; no prereg binary involved). Skipped (77) without torch.
set -uo pipefail
: "${PREREG_SOURCE_DIR:?}"
py=/usr/bin/python3
"$py" -c 'import torch' 2>/dev/null || { echo "skipped: torch is not installed for $py"; exit 77; }
exec "$py" "$PREREG_SOURCE_DIR/tests/python/test_qwen_decode.py"
