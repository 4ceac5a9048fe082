// Portable frozen protocols (docs/scale-out.md, "Bundles"): `prereg export` writes a frozen
// protocol with everything that proves it; `prereg import` verifies it all and stores it.
#pragma once

#include "base/json.hpp"
#include "crypto/crypto.hpp"
#include "store/store.hpp"
#include "store/trust.hpp"

#include <string>

namespace prereg {

/// The bundle format's version (member `prereg_bundle`).
inline constexpr int bundle_version = 1;

/// The bundle of the frozen protocol `hash` in `s` (verified by store::load first): the
/// normalised protocol, its source text, the signed freeze record and the signer's public key.
/// Exit 2 for a protocol with outside arms (their files are not carried).
[[nodiscard]] json export_bundle(const store &s, const std::string &hash);

/// What import did.
struct import_outcome {
  std::string hash;
  std::string protocol_id;
  std::string signer;           ///< the freeze record's signer (fingerprint)
  bool already_present = false; ///< stored and ledgered before: nothing written
};

/// Verifies `bundle` (parsed from `where`): member set, the protocol hash, the protocol
/// re-validated by this build, the source against the freeze record, the public key against
/// the record's signer, the record's signature, and — when `trust` is pinned — that the signer
/// is pinned. Then stores it, saves the key and appends an `import` entry signed by `key`, all
/// under the store lock. Malformed: exit 2; any verification failure: exit 3.
import_outcome import_bundle(const store &s, const json &bundle, const std::string &where,
                             const trust_root &trust, const signing_key &key);

} // namespace prereg
