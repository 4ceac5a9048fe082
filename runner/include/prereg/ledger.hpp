// The append-only ledger (CONTRACT.md section 3): one signed, hash-chained JSON line per event.
#pragma once

#include "prereg/crypto.hpp"
#include "prereg/json.hpp"

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace prereg {

/// Ledger event names.
namespace ledger_event {
inline constexpr const char *freeze = "freeze";
inline constexpr const char *run_start = "run-start";
inline constexpr const char *run_complete = "run-complete";
inline constexpr const char *run_aborted = "run-aborted";
} // namespace ledger_event

/// The SHA-256 `prev` of the first entry: 64 zeros.
inline const std::string ledger_genesis(64, '0');

/// Looks up a signer's public key by fingerprint (null if unknown).
using key_lookup = std::function<std::optional<public_key>(const std::string &fingerprint)>;

/// `ledger.jsonl`: each line is the JCS bytes of {seq, time, event, protocol_hash, prev, ...,
/// signature}; `prev` is the SHA-256 hex of the previous line's bytes (without its newline).
/// Callers hold the store's lock around append().
class ledger {
public:
  explicit ledger(std::filesystem::path file) : m_file(std::move(file)) {}

  /// Appends `fields` (event, protocol_hash, and any extra members) as the next entry, adding
  /// seq, time, prev and the signature; rewrites the file atomically. Returns the entry.
  json append(json fields, const signing_key &key);

  /// Every entry, parsed strictly, in file order (no verification).
  [[nodiscard]] std::vector<json> entries() const;

  /// Checks seq order, the prev chain and every signature (keys from `keys`); throws `error`
  /// (exit 3) naming the first bad seq. Returns the number of entries.
  std::size_t verify(const key_lookup &keys) const;

  [[nodiscard]] const std::filesystem::path &path() const noexcept { return m_file; }

private:
  std::filesystem::path m_file;
  [[nodiscard]] std::vector<std::string> lines() const;
};

/// Current UTC time as RFC 3339 with microseconds, e.g. 2026-11-29T10:40:00.123456Z.
[[nodiscard]] std::string utc_now_rfc3339();

} // namespace prereg
