# The README's shell blocks, run as printed from a fresh clone with a fresh HOME (issue 17).
# The ```sh blocks run in one bash session in the clone, line by line, with the built binary
# as the clone's build/prereg (tools/setup.sh itself is .ci/run's first command). A block after
# a `<!-- readme-test: gpu -->` line needs a usable CUDA device: without one, its lines run until
# the first one commented "on the GPU", which must exit 5 (the environment cannot serve).
source "$(dirname "$0")/lib.bash"
git -C "$PREREG_SOURCE_DIR" rev-parse --git-dir >/dev/null 2>&1 || { echo "skip - not a git checkout"; exit 77; }
clone=$work/clone
git clone -q "$PREREG_SOURCE_DIR" "$clone" && pass "fresh clone" || { fail "git clone"; finish; }
mkdir -p "$clone/build" "$work/home"
ln -s "$PREREG" "$clone/build/prereg"
# A fresh HOME and nothing of the test harness's environment.
unset PREREG_STORE PREREG_KEY XDG_CONFIG_HOME
export HOME=$work/home

gpu=0
"$PREREG" devices cuda >/dev/null 2>&1 && gpu=1
python3 - "$PREREG_SOURCE_DIR/README.md" "$work/blocks" <<'PY' || fail "README blocks extracted"
import os, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
out = sys.argv[2]
os.makedirs(out, exist_ok=True)
n, i, gpu_next = 0, 0, False
while i < len(lines):
    line = lines[i]
    if line.strip() == "<!-- readme-test: gpu -->":
        gpu_next = True
    elif line.strip() == "```sh":
        body = []
        i += 1
        while lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        n += 1
        open(f"{out}/{n:02d}{'-gpu' if gpu_next else ''}.sh", "w").write("\n".join(body) + "\n")
        gpu_next = False
    i += 1
assert n >= 2, "fewer than two sh blocks in the README"
PY
cd "$clone" || exit 1
# One session for all blocks, in README order (a reader's shell keeps what an earlier block
# exported), one command per line, stopping at the first failure.
script=$work/readme.run
{
  echo 'set -o pipefail'
  for block in "$work"/blocks/*.sh; do
    name=$(basename "$block" .sh)
    skip=0
    while IFS= read -r line; do
      [[ -z ${line// } || $skip -eq 1 ]] && continue
      cmd=${line%% #*}
      if [[ $name == *-gpu && $gpu -eq 0 && $line == *"on the GPU"* ]]; then
        printf '%s\nrc=$?; [ $rc -eq 5 ] || { echo "FAILED %s: exit $rc without a GPU, wanted 5"; exit 1; }\n' "$cmd" "$name"
        skip=1
        continue
      fi
      printf '%s || { echo "FAILED %s: %q"; exit 1; }\n' "$cmd" "$name" "$cmd"
    done <"$block"
    echo "echo PASSED $name"
  done
} >"$script"
bash "$script" >"$work/readme.out" 2>"$work/readme.err" </dev/null
for block in "$work"/blocks/*.sh; do
  name=$(basename "$block" .sh)
  grep -qx "PASSED $name" "$work/readme.out" && pass "README block $name runs as printed" \
    || fail "README block $name: $(grep FAILED "$work/readme.out" | head -1) $(tail -2 "$work/readme.err")"
done
[ -z "$(git -C "$clone" status --porcelain)" ] && pass "the blocks left the clone's tree clean" \
  || fail "the blocks changed the clone: $(git -C "$clone" status --porcelain | head -3)"
finish
