#!/usr/bin/env bash
# CI: a real single-node Slurm cluster (Debian's slurm-wlm and munge; slurmctld and slurmd on
# this host, as root), then `prereg slurm` of a small CPU protocol as a 3-task job array plus a
# dependent merge job; the merged report must audit clean (docs/scale-out.md, "Slurm").
# Usage: .ci/slurm.sh [BUILD_DIR]   (default build; needs root, or an already running cluster
# with PREREG_SLURM_RUNNING=1).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
prereg=$(realpath "$build/prereg")
export DEBIAN_FRONTEND=noninteractive
work=$(mktemp -d /tmp/prereg-slurm.XXXXXX)
chmod 755 "$work"
started=()
cleanup() {
  local rc=$?
  for pid in "${started[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${started[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$work" 2>/dev/null || { sleep 1; rm -rf "$work" 2>/dev/null || true; }
  exit "$rc"
}
trap cleanup EXIT
die() { echo "slurm CI: $*" >&2; for f in "$work"/slurm/*.log "$work"/log/*; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done >&2; exit 1; }

if [ "${PREREG_SLURM_RUNNING:-0}" != 1 ]; then
  [ "$(id -u)" -eq 0 ] || die "needs root to start munged, slurmctld and slurmd"
  command -v slurmctld >/dev/null && command -v munged >/dev/null ||
    apt-get install -y -qq slurm-wlm munge >/dev/null
  mkdir -p "$work/log" "$work/spool/ctld" "$work/spool/d" /etc/munge /var/lib/munge /var/log/munge /run/munge
  # munge: a fresh key, the daemon as root (-f: this container's folders are not munge-owned).
  [ -s /etc/munge/munge.key ] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
  chmod 400 /etc/munge/munge.key
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    munged -f --force >/dev/null 2>&1 || die "munged did not start"
    [ -s /run/munge/munged.pid ] && started+=("$(cat /run/munge/munged.pid)")
  fi
  munge -n | unmunge >/dev/null || die "munge does not round-trip"
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
  conf=/etc/slurm/slurm.conf
  mkdir -p /etc/slurm
  cat >"$conf" <<CONF
ClusterName=prereg-ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$work/spool/ctld
SlurmdSpoolDir=$work/spool/d
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  slurmctld -D -f "$conf" >"$work/log/slurmctld.out" 2>&1 &
  started+=($!)
  slurmd -D -f "$conf" >"$work/log/slurmd.out" 2>&1 &
  started+=($!)
  for _ in $(seq 60); do
    sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)' && break
    sleep 1
  done
  sinfo -h -o '%t' | grep -qE '^(idle|mix|alloc)' || { scontrol update nodename="$host" state=resume 2>/dev/null || true; sleep 2; }
  sinfo -h -o '%t' | grep -qE '^(idle|mix|alloc)' || die "the node did not come up: $(sinfo 2>&1 | tail -2)"
fi
echo "slurm CI: cluster up: $(sinfo -h -o '%P %t %c' | head -1)"

export PREREG_STORE=$work/store PREREG_KEY=$work/key/signing.key
export XDG_CONFIG_HOME=$work/config XDG_CACHE_HOME=$work/cache
hash=$("$prereg" freeze tests/data/protocols/cpu_shards.yaml | tail -n 1)
"$prereg" slurm "$hash" --shards 3 --partition ci --out "$work/reports" --work "$work/slurm" \
  --script "$work/submit.sh"
bash "$work/submit.sh"
read -r array merge <"$work/slurm/jobs"
for _ in $(seq 170); do
  [ -s "$work/slurm/merged.path" ] && break
  state=$(squeue -h -j "$array,$merge" -o '%T' 2>/dev/null | sort -u | tr '\n' ' ')
  [ -z "$state" ] && [ ! -s "$work/slurm/merged.path" ] && { sleep 2; [ -s "$work/slurm/merged.path" ] || die "the jobs ended without a merged report"; }
  sleep 1
done
[ -s "$work/slurm/merged.path" ] || die "no merged report after 170 s"
merged=$(cat "$work/slurm/merged.path")
for k in 1 2 3; do [ -s "$work/slurm/shard-$k.path" ] || die "shard $k wrote no report"; done
"$prereg" audit "$merged"
grep -q '"kind":"shards"' "$merged/report.json" || die "not a shards merge"
"$prereg" ledger verify
echo "slurm CI: 3-task array + merge job: merged report $merged audits clean"

# Grading as a job array (docs/grading.md, "Scale out"): a CPU task (no held-out shapes), two
# numpy submissions (an honest one and a NaN-writing one), one array task each, the baseline's
# job before them and the leaderboard's after them; the leaderboard must audit clean and rank
# the honest one only. Skipped where python3 has no numpy.
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  export PREREG_PYTHON=/usr/bin/python3
  sed '/heldout:/d' tests/data/grading/task.template.yaml >"$work/task.yaml"
  task=$("$prereg" freeze "$work/task.yaml" | tail -n 1)
  "$prereg" submit "$task" tests/data/grading/submissions/honest_numpy.py --name numpy >/dev/null
  "$prereg" submit "$task" tests/data/grading/submissions/nan_output.py --name nan >/dev/null
  "$prereg" slurm "$task" --grade --partition ci --out "$work/reports" --work "$work/grade" \
    --script "$work/grade.sh"
  bash "$work/grade.sh"
  read -r base garray gclose <"$work/grade/jobs"
  for _ in $(seq 240); do
    [ -s "$work/grade/leaderboard.path" ] && break
    state=$(squeue -h -j "$base,$garray,$gclose" -o '%T' 2>/dev/null | sort -u | tr '\n' ' ')
    [ -z "$state" ] && [ ! -s "$work/grade/leaderboard.path" ] && { sleep 2; [ -s "$work/grade/leaderboard.path" ] || die "the grading's jobs ended without a leaderboard"; }
    sleep 1
  done
  [ -s "$work/grade/leaderboard.path" ] || die "no leaderboard after 240 s"
  board=$(cat "$work/grade/leaderboard.path")
  "$prereg" audit "$board"
  /usr/bin/python3 - "$board/leaderboard.json" <<'PY' || die "the leaderboard does not rank as expected"
import json, sys
e = {x['name']: x for x in json.load(open(sys.argv[1]))['entries']}
assert e['numpy']['rank'] == 1 and e['nan']['rank'] is None and e['nan']['excluded'], e
assert e['numpy']['retime']['confirmed'] is True and e['nan']['retime'] is None, e['numpy']['retime']
PY
  echo "slurm CI: grading as a 2-task array: leaderboard $board audits clean, numpy ranked (re-timed in its array task), nan excluded"
fi
