// The ledger read and verified once: what the audit's `ledger` and `history` checks read of it,
// indexed by protocol, so that each audit looks at its own protocol's entries only. An audit
// reads it for itself; `prereg site` reads it once for many audits against one store and one
// trust root (docs/site.md, "Scale").
#pragma once

#include "base/json.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace prereg {
class store;
struct trust_root;

/// The ledger as one read saw it. Read-only after prepare_ledger(), so audits on several
/// threads may share it (they never touch the ledger's own cache).
struct prepared_ledger {
  /// The `ledger` check's FAIL detail when the ledger does not verify with the trust root's
  /// keys (exactly the text a live audit gives), else nullopt.
  std::optional<std::string> verify_failure;
  std::size_t verified = 0;                   ///< verify()'s count of entries
  std::vector<std::string> lookups;           ///< fingerprints the verification looked up, in order
  std::optional<std::string> entries_failure; ///< why the entries could not be read, if so
  std::vector<json> entries;                  ///< every entry, in file order
  std::vector<std::string> line_hashes;       ///< SHA-256 hex of each line, in file order
  /// True when every entry is an object whose event, protocol_hash and run_id are strings or
  /// absent: then `by_hash` lists, for each protocol_hash, the indices of its entries, and a
  /// scan of those gives what a scan of all entries gives. Else the checks scan all entries.
  bool indexed = false;
  std::unordered_map<std::string, std::vector<std::size_t>> by_hash;

  /// The indices of the entries whose protocol_hash is `hash` (indexed only).
  [[nodiscard]] const std::vector<std::size_t> &of(const std::string &hash) const;
  /// The SHA-256 hex of line `seq` (1-based), or nullopt (ledger::line_hash()).
  [[nodiscard]] std::optional<std::string> line_hash(std::int64_t seq) const;
};

/// Reads the store's ledger once: verify() with `trust`'s keys (as every audit's `ledger` check
/// would), the entries, the line hashes and the index. Never throws for a bad ledger (the
/// failure is recorded for the checks to FAIL with).
[[nodiscard]] prepared_ledger prepare_ledger(const store &s, const trust_root &trust);

} // namespace prereg
