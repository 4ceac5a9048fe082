# docs/walkthrough.md kept working (issue 46): its ```sh blocks run in order, line by line, in one
# bash session in a fresh HOME, with the built binary as `prereg` on PATH and the repository's
# examples/walkthrough/ as the page copies it. A line commented `# exit N` must exit N, every
# other line 0. Every `prereg: error:` line the page shows in its ```text blocks must be printed
# the same (`~` for the fresh HOME), so the planted mistake's refusal the page quotes stays true.
source "$(dirname "$0")/lib.bash"
py=${PREREG_TEST_PYTHON:-/usr/bin/python3}
"$py" -c 'import numpy' 2>/dev/null || { echo "skipped: $py has no numpy"; exit 77; }
page=$PREREG_SOURCE_DIR/docs/walkthrough.md
mkdir -p "$work/home" "$work/bin"
ln -s "$PREREG" "$work/bin/prereg"
unset PREREG_STORE PREREG_KEY XDG_CONFIG_HOME XDG_CACHE_HOME
export HOME=$work/home PATH="$work/bin:$PATH" PREREG_PYTHON=$py REPO=$PREREG_SOURCE_DIR

"$py" - "$page" "$work" <<'PY' || fail "the page's blocks extracted"
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
cmds, errors, kind = [], [], None
for line in lines:
    if line.startswith("```"):
        kind = line[3:].strip() if kind is None else None
        continue
    if kind == "sh" and line.strip() and not line.lstrip().startswith("#"):
        cmds.append(line)
    elif kind == "text" and line.startswith("prereg: error: "):
        errors.append(line)
open(sys.argv[2] + "/cmds", "w").write("\n".join(cmds) + "\n")
open(sys.argv[2] + "/errors", "w").write("\n".join(errors) + ("\n" if errors else ""))
PY
[ -s "$work/cmds" ] && pass "the page has $(wc -l <"$work/cmds") command lines" || fail "no commands on the page"
[ -s "$work/errors" ] && pass "the page quotes $(wc -l <"$work/errors") error line(s)" || fail "no error line on the page"

cd "$HOME" || exit 1
: >"$work/all_err"
while IFS= read -r cmd; do
  want=0
  [[ "$cmd" =~ \#\ exit\ ([0-9]+)$ ]] && want=${BASH_REMATCH[1]}
  eval "$cmd" >"$work/o" 2>"$work/e" </dev/null
  got=$?
  sed "s#$HOME#~#g" "$work/e" >>"$work/all_err"
  if [ "$got" -eq "$want" ]; then pass "$cmd (exit $got)"; else
    fail "$cmd: exit $got, wanted $want"; sed 's/^/    /' "$work/e" | head -5; fi
done <"$work/cmds"
while IFS= read -r line; do
  grep -qxF -- "$line" "$work/all_err" && pass "the page's error line is printed: ${line:0:60}..." \
    || { fail "not printed: $line"; grep '^prereg: error' "$work/all_err" | sed 's/^/    got: /'; }
done <"$work/errors"
finish
