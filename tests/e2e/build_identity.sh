# Build-time provenance (cmake/build_id.cmake): the commit with a dirty flag and the diff's hash,
# on a scratch git repository; and the install rules (cmake --install) of the real build.
source "$(dirname "$0")/lib.bash"
command -v git >/dev/null && command -v cmake >/dev/null || { echo "needs git and cmake"; exit 1; }
repo=$work/repo
id() { cmake -DSOURCE_DIR="$repo" -DOUTPUT="$work/id.hpp" -P "$PREREG_SOURCE_DIR/cmake/build_id.cmake" &&
  sed -n 's/.*git_commit = "\(.*\)";/\1/p' "$work/id.hpp"; }
mkdir -p "$repo" && git -C "$repo" init -q && echo one >"$repo/a.txt" &&
  git -C "$repo" add a.txt && git -C "$repo" -c user.name=t -c user.email=t@t commit -qm one
head=$(git -C "$repo" rev-parse HEAD)
[ "$(id)" = "$head" ] && pass "clean tree: the commit alone" || fail "clean: $(id)"
echo two >"$repo/a.txt"
d1=$(id)
[[ $d1 =~ ^$head\+dirty\.[0-9a-f]{64}$ ]] && pass "edited tracked file: dirty with the diff's hash" || fail "dirty: $d1"
echo three >"$repo/a.txt"
d2=$(id)
[[ $d2 == $head+dirty.* && $d2 != "$d1" ]] && pass "another edit, another hash" || fail "hash did not change: $d2"
echo two >"$repo/a.txt"
[ "$(id)" = "$d1" ] && pass "the same difference, the same hash" || fail "not reproducible"
git -C "$repo" checkout -q a.txt
touch "$repo/a.txt"
[ "$(id)" = "$head" ] && pass "touched but unchanged: clean" || fail "touch made it dirty"
echo new >"$repo/untracked.txt"
[[ $(id) == $head+dirty.* ]] && pass "an untracked file makes it dirty" || fail "untracked ignored"
echo untracked.txt >"$repo/.git/info/exclude"
[ "$(id)" = "$head" ] && pass "an ignored file does not" || fail "ignored file made it dirty"
stamp=$(stat -c %Y "$work/id.hpp")
sleep 1
id >/dev/null
[ "$(stat -c %Y "$work/id.hpp")" = "$stamp" ] && pass "unchanged identity: the header is not rewritten" || fail "header rewritten"
rm -rf "$repo/.git"
[ "$(id)" = "unknown" ] && pass "outside git: unknown" || fail "no git: $(id)"
"$PREREG" --version | grep -qE "^prereg [0-9.]+ \(([0-9a-f]{40}(\+dirty\.[0-9a-f]{64})?|unknown);" \
  && pass "prereg --version shows the build-time identity" || fail "--version: $("$PREREG" --version)"

# cmake --install: bin/prereg, the docs and the example protocols.
if [ -n "${PREREG_BUILD_DIR:-}" ] && [ -f "$PREREG_BUILD_DIR/cmake_install.cmake" ]; then
  cmake --install "$PREREG_BUILD_DIR" --prefix "$work/prefix" >"$work/install.log" 2>&1 \
    && pass "cmake --install" || fail "cmake --install: $(tail -2 "$work/install.log")"
  [ -x "$work/prefix/bin/prereg" ] && "$work/prefix/bin/prereg" --version >/dev/null && pass "bin/prereg runs" || fail "bin/prereg"
  [ -f "$work/prefix/share/doc/prereg/README.md" ] && [ -f "$work/prefix/share/doc/prereg/docs/protocol.md" ] \
    && [ -f "$work/prefix/share/doc/prereg/docs/schema/report.schema.json" ] && pass "docs installed" || fail "docs"
  [ -f "$work/prefix/share/prereg/protocols/cpu_smoke.yaml" ] && [ -f "$work/prefix/share/prereg/protocols/bench/softmax_fp32.yaml" ] \
    && pass "protocols installed" || fail "protocols"
  "$work/prefix/bin/prereg" check "$work/prefix/share/prereg/protocols/cpu_smoke.yaml" >/dev/null \
    && pass "an installed protocol checks" || fail "installed protocol"
else
  fail "PREREG_BUILD_DIR has no cmake_install.cmake"
fi
finish
