#!/usr/bin/env bash
# Session 5, device call C: the seeds' frozen protocols in the committed store (issue 13):
# ln_batch1_peers unless call B ran it, then qwen_decode; each report audited there.
# Logs go under $OUT/logs as they are written; the committed store is saved after each run.
# Usage: BUDGET=SECONDS bash tools/device_s5c.sh BIN_DIR
set -uo pipefail
SECONDS=0
bin=${1:-.devbin}
final=${OUT:-out}
mkdir -p "$final"
out=$(cd "$final" && pwd)/logs
mkdir -p "$out"
snap() { tar czf "$final/store.tgz" reports .prereg; }
chmod 600 .keys/signing.key
export PREREG_KEY=$PWD/.keys/signing.key PREREG_STORE=$PWD/.prereg PREREG_PYTHON=python3
export PATH=/opt/torch/.venv/bin:$PATH
S="$out/summary.txt"
step() { echo "== $* ($(date +%T), ${SECONDS}s)" | tee -a "$S"; }
left() { echo $(( ${BUDGET:-560} - SECONDS )); }
"$bin/prereg" --version | tee -a "$S"
for p in ${RUN:-protocols/ln_batch1_peers.yaml protocols/qwen_decode.yaml}; do
  [ "$(left)" -lt 60 ] && { echo "skip $p: $(left)s left" | tee -a "$S"; continue; }
  step "$p (committed store)"
  h=$("$bin/prereg" check "$p" | tail -n 1)
  s0=$SECONDS
  timeout $(( $(left) - 10 )) script -qfc "$bin/prereg run $h" "$out/$(basename "$p" .yaml).pty" >/dev/null 2>&1
  echo "$p rc=$? $((SECONDS - s0))s" | tee -a "$S"
  tr '\r' '\n' <"$out/$(basename "$p" .yaml).pty" | grep -v '^\s*$' | tail -n 4 | tee -a "$S"
  id=$(grep -m1 '^id:' "$p" | awk '{print $2}')
  d=$(ls -d reports/$id/*/ 2>/dev/null | sort | tail -n 1)
  [ -n "$d" ] && { "$bin/prereg" audit "$d" >"$out/audit_$id.txt" 2>&1; echo "audit rc=$? $d" | tee -a "$S"; }
  snap
done
snap
echo "== done (${SECONDS}s)" | tee -a "$S"
