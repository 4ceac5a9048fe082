#!/usr/bin/env bash
# Session 7, device call D (issue 13, item 1): is the embedded interpreter slower, or is host
# speed just different from one machine and moment to the next? tools/host_probe.py's
# pure-Python loop, alternately in a plain python3 and inside prereg (tools/probes/micro_gpu.yaml),
# three rounds on one machine; the loop's median host time each time.
# Usage: bash tools/device_s7d.sh BIN_DIR
set -uo pipefail
bin=${1:-.devbin}
final=${OUT:-out}
mkdir -p "$final" /tmp/logs-s7d
export PATH=/opt/torch/.venv/bin:$PATH PREREG_PYTHON=python3 PYTHONUNBUFFERED=1
S=/tmp/logs-s7d/summary.txt
med() { python3 -c "import json,statistics,sys; print(statistics.median(json.load(open(sys.argv[1]))['pybench_loop_us'][-200:]))" "$1"; }
for round in 1 2 3; do
  timeout 60 python3 tools/host_probe.py micro /tmp/logs-s7d/plain_$round.json >/tmp/logs-s7d/plain_$round.out 2>&1
  echo "round $round plain python3 loop_us $(med /tmp/logs-s7d/plain_$round.json)" | tee -a "$S"
  timeout 60 env PREREG_PROBE_LOG=/tmp/logs-s7d/prereg_$round.json "$bin/prereg" try tools/probes/micro_gpu.yaml \
    --quiet --out /tmp/try-$round >/tmp/logs-s7d/prereg_$round.out 2>&1
  echo "round $round prereg loop_us $(med /tmp/logs-s7d/prereg_$round.json)" | tee -a "$S"
done
tar czf "$final/logs.tgz" -C /tmp logs-s7d
