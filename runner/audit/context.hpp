// What the audit's checks share: a FAIL and its messages, and the report folder read once.
#pragma once

#include "audit/audit.hpp"
#include "audit/prepared_ledger.hpp"
#include "base/json.hpp"
#include "base/json_reader.hpp"
#include "model/report_model.hpp"
#include "spec/protocol.hpp"
#include "spec/records.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace prereg::audit_detail {

/// A check failed; the message is printed after `FAIL name:`.
struct check_failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws check_failed(why).
[[noreturn]] void fail(const std::string &why);

/// The strict reader's failures as FAILs: "missing field <path>", else "<path> <problem>".
class check_fault final : public json_fault {
public:
  [[noreturn]] void fail(const std::string &path, std::string_view problem) const override;
};

/// `j` read strictly at `path` (e.g. "report", "envelope"); a failure is a check_failed.
[[nodiscard]] json_node read_strictly(const json &j, std::string path);

/// Any JSON integer (as nlohmann's int64) or an integral float below 9.2e18 in magnitude;
/// else "<path> is not an integer".
[[nodiscard]] std::int64_t any_integer(const json_node &n);

/// The first 12 hex digits of a hash, for messages.
[[nodiscard]] std::string short_hash(const std::string &h);

/// At most `max` characters of a JSON value, for messages.
[[nodiscard]] std::string excerpt(const json &j, std::size_t max = 80);

/// The differing members of two JSON objects, as "field is X in the report, recomputed Y".
[[nodiscard]] std::string describe_difference(const json &recomputed, const json &reported);

/// Joins at most `max` messages, saying how many were left out.
[[nodiscard]] std::string join_some(const std::vector<std::string> &items, std::size_t max = 3);

/// report.dsse.json, its payload decoded.
struct envelope_view {
  std::string payload_type;
  std::string payload; ///< base64-decoded
  json signatures;     ///< an array
};

/// The report folder as every check reads it: report.json parsed once (each member on its
/// own), the store, the trust root and the signers the checks accepted.
class audit_context {
public:
  audit_context(std::filesystem::path dir, const store &s, const trust_root &trust,
                const std::vector<std::filesystem::path> &checkpoints,
                const prepared_ledger *prepared = nullptr);

  [[nodiscard]] const std::filesystem::path &dir() const { return m_dir; }
  [[nodiscard]] const store &st() const { return m_store; }
  [[nodiscard]] const trust_root &trust() const { return m_trust; }
  [[nodiscard]] const std::vector<std::filesystem::path> &checkpoints() const {
    return m_checkpoints;
  }
  [[nodiscard]] const std::vector<std::string> &signers() const { return m_signers; }
  /// The ledger as read once for many audits, or null (the checks read the ledger themselves).
  /// The store's ledger as read once for this audit's `ledger` and `history` checks: the one the
  /// caller gave (`prereg site`: one reading for many audits), else read on first use.
  [[nodiscard]] const prepared_ledger &prepared() const;

  /// report.json's bytes (FAIL if unreadable).
  [[nodiscard]] const std::string &bytes() const;
  /// report.json parsed strictly (FAIL if unreadable or not an object).
  [[nodiscard]] const json &report() const;
  /// report.json read strictly at the path "report" (FAIL if unreadable).
  [[nodiscard]] json_node report_node() const { return read_strictly(report(), "report"); }

  /// The signer's key as the trust root accepts it, or nullopt; remembers who signed.
  [[nodiscard]] std::optional<public_key> key(const std::string &fingerprint) const;
  /// Where an unknown signer's key would have to be, for messages.
  [[nodiscard]] std::string key_source() const;
  /// key() as a ledger's key lookup.
  [[nodiscard]] key_lookup lookup() const;

  /// report.dsse.json read strictly (FAIL if missing or malformed).
  [[nodiscard]] envelope_view envelope() const;

  /// The report's members in `parts` (report_part bits), parsed once by the report model; FAIL
  /// with the first member that does not parse, naming its JSON path.
  [[nodiscard]] const report_document &doc(unsigned parts) const;
  /// protocol.hash.
  [[nodiscard]] std::string hash() const { return doc(report_part::protocol).protocol.hash; }
  /// protocol.body validated as a protocol (FAIL naming why not).
  [[nodiscard]] protocol proto() const;
  /// The raw run rebuilt from the report's recorded data (a version-1 report's missing raw
  /// fields from its defects' evidence, where the defects parse).
  /// Every count is bounded first by the protocol's (a report's own numbers size the work):
  /// no more cells than the plan, no cell with more samples than the repetitions.
  [[nodiscard]] raw_run raw() const;

private:
  void read_report();
  void parse_members();

  std::filesystem::path m_dir;
  const store &m_store;
  const trust_root &m_trust;
  const std::vector<std::filesystem::path> &m_checkpoints;
  const prepared_ledger *m_prepared;
  mutable std::optional<prepared_ledger> m_own_ledger; ///< prepared() when none was given
  mutable std::vector<std::string> m_signers;          ///< accepted signers, in first-use order
  std::optional<std::string> m_bytes;
  std::optional<json> m_report;
  std::string m_report_error;
  report_document m_doc;                                       ///< every member that parsed
  std::vector<std::pair<unsigned, std::string>> m_part_errors; ///< those that did not, and why
};

} // namespace prereg::audit_detail
