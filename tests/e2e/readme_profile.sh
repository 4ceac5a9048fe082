# The README's "Profile first, then claim" numbers are generated from the committed reports.
set -uo pipefail
command -v python3 >/dev/null || { echo "needs python3"; exit 1; }
python3 "$PREREG_SOURCE_DIR/tools/gen/profile_walkthrough.py" --check
