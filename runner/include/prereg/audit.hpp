// `prereg audit`: re-check a signed report against the store, its frozen protocol, the ledger
// and its own raw data (docs/audit.md).
#pragma once

#include "prereg/crypto.hpp"
#include "prereg/error.hpp"
#include "prereg/store.hpp"

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// The outcome of one audit check; `detail` says what was verified, or why it failed.
struct audit_check {
  std::string name;
  bool passed = false;
  std::string detail;
};

/// Every check of one audit, in audit_check_names() order, and the protocol's run history.
struct audit_result {
  std::filesystem::path report_dir;
  std::vector<audit_check> checks;
  std::string history; ///< "run K of N; run 1 completed <time>, run 2 aborted at <time> (...)"

  /// True only if every check passed.
  [[nodiscard]] bool passed() const;
  /// exit_code::ok if every check passed, else exit_code::audit_failed.
  [[nodiscard]] exit_code exit() const;
  /// The names of the failed checks, in order.
  [[nodiscard]] std::vector<std::string> failed() const;
};

/// The checks in the order they run and print: envelope, payload, protocol, freeze,
/// statistics, verdicts, defects, ledger, history.
[[nodiscard]] std::span<const std::string_view> audit_check_names();

/// Public keys to trust besides the store's keys/: a FILE is one PEM key, a DIR contributes
/// every *.pub in it (sorted). A missing path or a file that is not an Ed25519 public key is
/// `error` (exit 2) naming it.
[[nodiscard]] std::vector<public_key>
load_trusted_keys(const std::vector<std::filesystem::path> &paths);

/// Audits the report folder `dir` against store `s`; signers are looked up in the store's
/// keys/ and in `trusted`. Never throws for a failed check (each check catches its own
/// errors and FAILs); throws `error` (exit 2) naming `dir` only if it does not exist or holds
/// neither report.json nor report.dsse.json.
[[nodiscard]] audit_result audit_report(const std::filesystem::path &dir, const store &s,
                                        const std::vector<public_key> &trusted);

/// One line per check (`PASS name: detail` / `FAIL name: why`), then a verdict line.
[[nodiscard]] std::string render_audit_text(const audit_result &r);

/// {"report", "passed", "exit_code", "history", "checks": [{name, passed, detail}]}, indented,
/// with a final newline (for CI).
[[nodiscard]] std::string render_audit_json(const audit_result &r);

} // namespace prereg
