# The source tree's rules (docs/layout.md): every include points down the component graph, no
# file over 600 lines or function over 80 in runner/, runner/ and tests/ formatted; and each
# check fails on a planted violation, with the line that names it.
source "$(dirname "$0")/lib.bash"
src=$PREREG_SOURCE_DIR
py=python3
expect_exit 0 "check_layers: every include points down" -- $py "$src/tools/check_layers.py"
expect_exit 0 "check_tree: no file over 600 lines, no function over 80" -- $py "$src/tools/check_tree.py"
if command -v clang-format >/dev/null; then
  mapfile -t files < <(git -C "$src" ls-files runner tests | grep -E '\.(cpp|hpp|h|cu|cuh)$')
  (cd "$src" && clang-format --dry-run --Werror "${files[@]}") >"$work/out" 2>"$work/err" &&
    pass "clang-format: ${#files[@]} files of runner/ and tests/ as .clang-format says" ||
    { fail "clang-format: files differ from .clang-format"; grep -m5 -E "warning|error" "$work/err"; }
else
  fail "clang-format is not installed (tools/setup.sh installs it)"
fi

# Planted violations in a copy of runner/ and the checks.
tree=$work/tree
mkdir -p "$tree/tools" && cp -r "$src/runner" "$tree/" && cp "$src"/tools/check_*.py "$tree/tools/"
printf '#include "run/run.hpp"\n' >>"$tree/runner/base/stats.cpp"
expect_exit 1 "check_layers: an include pointing up fails" -- $py "$tree/tools/check_layers.py"
grep -q '^runner/base/stats.cpp:[0-9]*: includes run/run.hpp, but base does not link run$' "$work/out" &&
  pass "check_layers names the file, the line and the missing link" || fail "check_layers: $(head -3 "$work/out")"
sed -i '$d' "$tree/runner/base/stats.cpp"
sed -i 's/prereg_component(spec DEPS crypto base)/prereg_component(spec DEPS crypto base run)/' \
  "$tree/runner/spec/CMakeLists.txt"
expect_exit 1 "check_layers: a cycle in the declared links fails" -- $py "$tree/tools/check_layers.py"
grep -q 'a cycle through spec' "$work/out" && pass "check_layers names the cycle" || fail "cycle: $(head -3 "$work/out")"
cp "$src/runner/spec/CMakeLists.txt" "$tree/runner/spec/CMakeLists.txt"
{ printf 'namespace prereg {\nint planted_long() {\n  int x = 0;\n'
  for i in $(seq 1 80); do printf '  x += %d;\n' "$i"; done
  printf '  return x;\n}\n} // namespace prereg\n'; } >"$tree/runner/base/planted.cpp"
expect_exit 1 "check_tree: an 84-line function fails" -- $py "$tree/tools/check_tree.py"
grep -q '^runner/base/planted.cpp:2: planted_long is 84 lines (over 80)$' "$work/out" &&
  pass "check_tree names the function and its length" || fail "check_tree: $(head -3 "$work/out")"
rm "$tree/runner/base/planted.cpp"
for i in $(seq 1 601); do echo "// line $i"; done >"$tree/runner/base/planted.hpp"
expect_exit 1 "check_tree: a 601-line file fails" -- $py "$tree/tools/check_tree.py"
grep -q '^runner/base/planted.hpp: 601 lines (over 600)$' "$work/out" &&
  pass "check_tree names the file" || fail "check_tree: $(head -3 "$work/out")"
finish
