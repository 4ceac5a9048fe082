// `prereg audit`: re-check a signed report against the store, its frozen protocol, the ledger
// and its own raw data (docs/audit.md).
#pragma once

#include "prereg/crypto.hpp"
#include "prereg/error.hpp"
#include "prereg/store.hpp"

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

/// The keys an audit or `ledger verify` accepts as signers (docs/audit.md, trust root).
struct trust_root {
  std::vector<public_key> keys; ///< the pinned keys; unused when not pinned
  std::string source; ///< "--trust", "the store's trust.json", or empty: not pinned

  [[nodiscard]] bool pinned() const noexcept { return !source.empty(); }
  /// The key with this fingerprint: only a pinned one when pinned, else the store's keys/.
  [[nodiscard]] std::optional<public_key> find(const store &s,
                                               const std::string &fingerprint) const;
  /// One line saying who signed (`signers`, full fingerprints) and whether that is pinned.
  [[nodiscard]] std::string describe(const store &s, const std::vector<std::string> &signers) const;
};

/// The trust root from `--trust` arguments: each is a PEM FILE, a DIR of *.pub, or a 64-hex
/// fingerprint of a key in the store's keys/; when given, only these keys are accepted. Without
/// arguments: the keys listed by the store's trust.json if it has one, else none pinned (the
/// store's keys/ are accepted, and the audit says so). Bad arguments are exit 2; a trust.json
/// that does not parse or names a key missing from keys/ is exit 3.
[[nodiscard]] trust_root resolve_trust(const std::vector<std::string> &args, const store &s);

/// Every check of one audit, in audit_check_names() order, and the protocol's run history.
struct audit_result {
  std::filesystem::path report_dir;
  std::vector<audit_check> checks;
  std::string trust; ///< trust_root::describe() of the signers the checks accepted
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

/// Public keys to pin: a FILE is one PEM key, a DIR contributes
/// every *.pub in it (sorted). A missing path or a file that is not an Ed25519 public key is
/// `error` (exit 2) naming it.
[[nodiscard]] std::vector<public_key>
load_trusted_keys(const std::vector<std::filesystem::path> &paths);

/// Audits the report folder `dir` against store `s`, accepting the signers `trust` accepts;
/// the `ledger` check also FAILs unless the ledger still holds every checkpoint file in
/// `checkpoints` (check_checkpoint). Never throws for a failed check (each check catches its own
/// errors and FAILs); throws `error` (exit 2) naming `dir` only if it does not exist or holds
/// neither report.json nor report.dsse.json.
[[nodiscard]] audit_result audit_report(const std::filesystem::path &dir, const store &s,
                                        const trust_root &trust,
                                        const std::vector<std::filesystem::path> &checkpoints = {});
/// audit_report with `trusted` pinned when it is not empty, else resolve_trust({}, s).
[[nodiscard]] audit_result audit_report(const std::filesystem::path &dir, const store &s,
                                        const std::vector<public_key> &trusted);

/// One line per check (`PASS name: detail` / `FAIL name: why`), then a verdict line.
[[nodiscard]] std::string render_audit_text(const audit_result &r);

/// {"report", "passed", "exit_code", "history", "checks": [{name, passed, detail}]}, indented,
/// with a final newline (for CI).
[[nodiscard]] std::string render_audit_json(const audit_result &r);

} // namespace prereg
