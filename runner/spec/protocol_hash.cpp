// The protocol hash: SHA-256 of the JCS bytes of the normalised protocol.
#include "base/json.hpp"
#include "crypto/crypto.hpp"
#include "spec/protocol.hpp"

namespace prereg {

std::string protocol_hash(const json &normalised) { return sha256_hex(canonical_json(normalised)); }

std::string protocol_hash(const protocol &p) { return protocol_hash(to_json(p)); }

} // namespace prereg
