// The trust root (docs/audit.md): the keys an audit, an import or `ledger verify` accepts as
// signers, pinned by --trust or the store's trust.json.
#pragma once

#include "crypto/crypto.hpp"
#include "store/store.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace prereg {

/// The keys an audit or `ledger verify` accepts as signers (docs/audit.md, trust root).
struct trust_root {
  std::vector<public_key> keys; ///< the pinned keys; unused when not pinned
  std::string source;           ///< "--trust", "the store's trust.json", or empty: not pinned

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

/// Public keys to pin: a FILE is one PEM key, a DIR contributes
/// every *.pub in it (sorted). A missing path or a file that is not an Ed25519 public key is
/// `error` (exit 2) naming it.
[[nodiscard]] std::vector<public_key>
load_trusted_keys(const std::vector<std::filesystem::path> &paths);

} // namespace prereg
