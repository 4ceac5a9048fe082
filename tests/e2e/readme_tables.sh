# The README's tables in step with the binary (issue 37, item 6): its commands table names
# exactly the commands `prereg --help` lists (but `help` itself), its audit table exactly the
# checks `prereg audit` prints, in that order (a committed report, audited against the
# committed store, read only), and its exit-code table exactly the codes of docs/cli.md's table
# and of the exit_code enum (runner/include/prereg/error.hpp). Then each comparison is shown to
# fail on a copy of the README with a row planted or removed.
source "$(dirname "$0")/lib.bash"
readme=$PREREG_SOURCE_DIR/README.md

# table_rows FILE HEADER: the rows of the table whose header line is HEADER.
table_rows() {
  awk -v h="$2" '$0 == h { on = 1; getline; next } on && /^\|/ { print; next } on { exit }' "$1"
}
# first_cells: each row's first cell ("| a | b |" -> "a").
first_cells() { sed -E 's/^\| //; s/ \| .*//'; }

# The lists to compare: the README's, then the binary's (one item a line).
readme_commands() {
  table_rows "$1" "| command | what it does |" | first_cells | grep -oE '`prereg [a-z]+' |
    sed 's/^`prereg //' | sort -u
}
binary_commands() {
  "$PREREG" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }' |
    grep -vx help | sort -u
}
readme_checks() { table_rows "$1" "| check | what it means |" | first_cells; }
audit_checks() {
  local dir
  dir=$(ls -d "$PREREG_SOURCE_DIR"/reports/cpu_smoke/*/ | head -n 1)
  "$PREREG" audit --store "$PREREG_SOURCE_DIR/.prereg" "$dir" 2>/dev/null |
    sed -nE 's/^(PASS|FAIL) ([a-z]+): .*/\2/p'
}
readme_codes() { table_rows "$1" "| code | meaning |" | first_cells; }
cli_codes() { table_rows "$PREREG_SOURCE_DIR/docs/cli.md" "| code | meaning |" | first_cells; }
enum_codes() {
  sed -n '/^enum class exit_code/,/^};/p' "$PREREG_SOURCE_DIR/runner/include/prereg/error.hpp" |
    grep -oE '= [0-9]+' | sed 's/= //'
}

# same WHAT A B: the two lists are equal; else say which rows are missing and which extra.
same() {
  if [ "$2" = "$3" ]; then return 0; fi
  local missing extra
  missing=$(comm -13 <(sort <<<"$2") <(sort <<<"$3") | grep . | tr '\n' ' ')
  extra=$(comm -23 <(sort <<<"$2") <(sort <<<"$3") | grep . | tr '\n' ' ')
  [ -n "$missing" ] && echo "    $1: missing from the README: $missing"
  [ -n "$extra" ] && echo "    $1: extra in the README: $extra"
  [ -z "$missing$extra" ] && echo "    $1: the same rows in another order"
  return 1
}

commands=$(binary_commands)
checks=$(audit_checks)
codes=$(enum_codes)
[ "$(wc -l <<<"$commands")" -ge 18 ] && pass "prereg --help lists $(wc -l <<<"$commands") commands" ||
  fail "prereg --help: $(tr '\n' ' ' <<<"$commands")"
[ "$(wc -l <<<"$checks")" -eq 11 ] && grep -qx pages <<<"$checks" && grep -qx isolation <<<"$checks" &&
  pass "prereg audit prints 11 checks, pages and isolation among them" || fail "audit checks: $(tr '\n' ' ' <<<"$checks")"
[ "$codes" = "$(seq 0 5)" ] && pass "the exit_code enum holds 0 to 5" || fail "enum: $codes"

# check_tables FILE: every comparison on FILE; prints what differs, fails if anything does.
check_tables() {
  local bad=0
  same "commands" "$(readme_commands "$1")" "$commands" || bad=1
  same "audit checks" "$(readme_checks "$1")" "$checks" || bad=1
  same "exit codes (error.hpp)" "$(readme_codes "$1")" "$codes" || bad=1
  same "exit codes (docs/cli.md)" "$(readme_codes "$1")" "$(cli_codes)" || bad=1
  return $bad
}

check_tables "$readme" >"$work/diff" && pass "the README's tables match the binary and docs/cli.md" ||
  { fail "the README's tables differ:"; cat "$work/diff"; }

# Each comparison fails on a planted difference (a row removed, a row added), naming the row.
plant() { # DESCRIPTION SED-SCRIPT EXPECTED-LINE
  sed -E "$2" "$readme" >"$work/README.md"
  if cmp -s "$readme" "$work/README.md"; then fail "$1: the plant changed nothing"; return; fi
  if check_tables "$work/README.md" >"$work/diff"; then fail "$1: not caught"; return; fi
  grep -qF -- "$3" "$work/diff" && pass "$1: caught ($3)" || { fail "$1: wrong report"; cat "$work/diff"; }
}
plant "a command row removed" '/^\| `prereg slurm /d' "commands: missing from the README: slurm"
plant "a command row added" 's/^(\| `prereg keygen` \|.*)$/\1\n| `prereg frobnicate` | planted |/' \
  "commands: extra in the README: frobnicate"
plant "the pages check removed" '/^\| pages \|/d' "audit checks: missing from the README: pages"
plant "a check added" 's/^(\| history \|.*)$/\1\n| signature | planted |/' \
  "audit checks: extra in the README: signature"
plant "two checks swapped" '/^\| payload \|/{h;d}; /^\| protocol \|/{G}' \
  "audit checks: the same rows in another order"
plant "an exit code removed" '/^\| 5 \| the environment/d' "exit codes (docs/cli.md): missing from the README: 5"
plant "an exit code added" 's/^(\| 5 \| the environment.*)$/\1\n| 6 | planted |/' \
  "exit codes (error.hpp): extra in the README: 6"
finish
