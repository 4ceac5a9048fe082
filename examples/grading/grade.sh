#!/usr/bin/env bash
# The GPU example grading (docs/grading.md), run on the H200 by tools/device/plans/grading.plan
# (its `grade` step: $PREREG the carried binary, the committed store and the project key):
# seals the held-out shapes here (the secret stays on this machine until the leaderboard reveals
# it), freezes the task, submits the honest submissions (eager, torch.compile, Triton,
# Liger-Kernel, prereg's own fused kernel as a plugin) and the GPU corpus of reward hacks,
# grades them, then times the reward call. Last line: the leaderboard's folder.
#   usage: bash examples/grading/grade.sh [REWARD_CALLS]   (default 10)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
prereg=${PREREG:-prereg}
calls=${1:-10}
work=$(mktemp -d /tmp/grading-example.XXXXXX)
trap 'rm -rf "$work"' EXIT
say() { echo "grade.sh: $*" >&2; }

cp "$here/heldout.yaml" "$work/heldout.yaml"
commitment=$("$prereg" seal "$work/heldout.yaml" | tail -n 1)
sed "s/COMMITMENT/$commitment/" "$here/task.template.yaml" >"$here/task.yaml"
task=$("$prereg" freeze "$here/task.yaml" | tail -n 1)
say "task $task (commitment $commitment)"

submit() { # NAME FILE...
  local name=$1
  shift
  "$prereg" submit "$task" "$@" --name "$name" >&2 || say "submit $name failed"
}
for s in eager:eager.py compiled:compiled.py triton:triton_rms.py liger:liger.py; do
  submit "${s%%:*}" "$here/submissions/${s#*:}"
done
# prereg's fused kernel as a plugin: carried prebuilt in .devbin, else built here with nvcc.
lib=$repo/.devbin/libprereg_fused.so
if [ ! -f "$lib" ] && command -v nvcc >/dev/null; then
  lib=$work/libprereg_fused.so
  nvcc -O3 -std=c++20 -arch=sm_90 -Xcompiler -fPIC -shared -I "$repo/runner/include" \
    -I "$repo/kernels" -o "$lib" "$here/submissions/prereg_fused/shim.cu" >&2 || say "nvcc failed"
fi
[ -f "$lib" ] && submit fused "$lib" || say "no libprereg_fused.so: prereg's fused kernel not submitted"
while IFS=$'\t' read -r file name family codes; do
  case $file in '#'* | '') continue ;; esac
  submit "$name" "$here/gpu_corpus/$file"
done <"$here/corpus_gpu.tsv"

t0=$(date +%s)
board=$("$prereg" grade "$task" --heldout "$work/heldout.secret.json" --out "$repo/reports" | tail -n 1)
say "graded in $(($(date +%s) - t0)) s: $board"
"$prereg" audit "$board" >&2
python3 - "$board/leaderboard.json" >&2 <<'PY'
import json, sys
for e in json.load(open(sys.argv[1]))['entries']:
    rt = e['retime'] or {}
    first, second = rt.get('first') or {}, rt.get('second') or {}
    print(f"{e['name']:>12} rank {e['rank']} score {e['score']:.3g} "
          f"{(e['exclusions'][0]['code'] if e['exclusions'] else ''):<14} re-timing: "
          + (f"confirmed={rt.get('confirmed')} median {first.get('median')} -> {second.get('median')} ms"
             f" ({len(rt.get('earlier', [])) + 1} re-timing(s))" if rt else "none"))
PY

# The reward in a loop: the first call reuses the leaderboard's baseline; calls per hour.
base=$board/$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['gradings'][0]['baseline']['path'])" "$board/leaderboard.json")
t0=$(date +%s.%N)
for ((i = 1; i <= calls; i++)); do
  "$prereg" reward "$task" "$here/submissions/triton_rms.py" --baseline "$base" \
    --out "$repo/reports" --json >"$work/reward-$i.json"
done
t1=$(date +%s.%N)
python3 - "$work" "$calls" "$t0" "$t1" >&2 <<'PY'
import json, sys
work, n, t0, t1 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
r = [json.load(open(f"{work}/reward-{i}.json")) for i in range(1, n + 1)]
per = (t1 - t0) / n
print(f"reward: {n} calls, {per:.2f} s a call, {3600 / per:.0f} calls per hour; "
      f"scores {[round(x['score'], 3) for x in r]}")
PY
echo "$repo/reports/grading_rmsnorm_bf16/rewards"
echo "$board"
