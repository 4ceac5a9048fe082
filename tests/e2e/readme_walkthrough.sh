# The README's walkthrough numbers are generated from the committed reports, not typed by hand.
set -uo pipefail
command -v python3 >/dev/null || { echo "needs python3"; exit 1; }
python3 "$PREREG_SOURCE_DIR/tools/gen/walkthrough.py" --check
