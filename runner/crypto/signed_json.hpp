// Signed JSON records: a record plus {"signature": {"keyid", "sig"}} over the JCS bytes of the
// record without its "signature" member. Used by freeze records and ledger entries.
#pragma once

#include "base/json.hpp"
#include "crypto/crypto.hpp"

#include <string>

namespace prereg {

/// `record` with a "signature" member added: Ed25519 over canonical_json(record).
[[nodiscard]] json sign_record(json record, const signing_key &key);

/// The fingerprint named by the record's signature, or empty if it has none.
[[nodiscard]] std::string record_signer(const json &record);

/// True only if the record carries a signature by `key` that verifies over its other members.
[[nodiscard]] bool verify_record(const json &record, const public_key &key);

} // namespace prereg
