// `prereg audit`: re-check a signed report against the store, its frozen protocol, the ledger
// and its own raw data (docs/audit.md).
#pragma once

#include "audit/prepared_ledger.hpp"
#include "crypto/crypto.hpp"
#include "prereg/error.hpp"
#include "store/store.hpp"
#include "store/trust.hpp"

#include <filesystem>
#include <optional>
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
  std::string trust;   ///< trust_root::describe() of the signers the checks accepted
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

/// Audits the report folder `dir` against store `s`, accepting the signers `trust` accepts;
/// the `ledger` check also FAILs unless the ledger still holds every checkpoint file in
/// `checkpoints` (check_checkpoint). Never throws for a failed check (each check catches its own
/// errors and FAILs); throws `error` (exit 2) naming `dir` only if it does not exist or holds
/// neither report.json nor report.dsse.json.
[[nodiscard]] audit_result audit_report(const std::filesystem::path &dir, const store &s,
                                        const trust_root &trust,
                                        const std::vector<std::filesystem::path> &checkpoints = {});
/// audit_report whose `ledger` and `history` checks read `prepared` (prepare_ledger(s, trust),
/// made once for many reports) instead of reading and verifying the ledger again: the same
/// checks over the same entries, with the same outcome and texts as long as the ledger has not
/// changed since `prepared` was read. Safe to call on several threads at once with one
/// `prepared` when `checkpoints` is empty.
[[nodiscard]] audit_result audit_report(const std::filesystem::path &dir, const store &s,
                                        const trust_root &trust,
                                        const std::vector<std::filesystem::path> &checkpoints,
                                        const prepared_ledger &prepared);
/// audit_report with `trusted` pinned when it is not empty, else resolve_trust({}, s).
[[nodiscard]] audit_result audit_report(const std::filesystem::path &dir, const store &s,
                                        const std::vector<public_key> &trusted);

/// One line per check (`PASS name: detail` / `FAIL name: why`), then a verdict line.
[[nodiscard]] std::string render_audit_text(const audit_result &r);

/// {"report", "passed", "exit_code", "history", "checks": [{name, passed, detail}]}, indented,
/// with a final newline (for CI).
[[nodiscard]] std::string render_audit_json(const audit_result &r);

} // namespace prereg
