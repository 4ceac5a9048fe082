# Shared helpers for the end-to-end scripts (sourced, not run by ctest: no test name).
set -uo pipefail
: "${PREREG:?PREREG must name the built binary}"
: "${PREREG_SOURCE_DIR:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PREREG_STORE="$work/store"
export PREREG_KEY="$work/key/signing.key"
export XDG_CONFIG_HOME="$work/config"
export XDG_CACHE_HOME="$work/cache" # the ledger's verified-prefix cache
failures=0
pass() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
# expect_exit CODE DESCRIPTION -- CMD...: runs CMD, checks its exit code, keeps stdout/stderr.
expect_exit() {
  local want=$1 what=$2; shift 3
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" -eq "$want" ]; then pass "$what (exit $got)"; else
    fail "$what: exit $got, wanted $want"; sed 's/^/    /' "$work/err" | head -5; fi
}
# expect_err PATTERN DESCRIPTION: the last command's stderr matches PATTERN (grep -E).
expect_err() {
  if grep -qE -- "$1" "$work/err"; then pass "$2"; else
    fail "$2: stderr lacks /$1/"; sed 's/^/    /' "$work/err" | head -5; fi
}
finish() {
  if [ "$failures" -eq 0 ]; then echo "all checks passed"; exit 0; fi
  echo "$failures checks failed"; exit 1
}
