// Signing and verifying JSON records over their canonical bytes.
#include "crypto/signed_json.hpp"

namespace prereg {

json sign_record(json record, const signing_key &key) {
  record.erase("signature");
  const std::string sig = key.sign(canonical_json(record));
  record["signature"] = {{"keyid", key.fingerprint()}, {"sig", base64_encode(sig)}};
  return record;
}

std::string record_signer(const json &record) {
  if (!record.is_object())
    return {};
  const auto it = record.find("signature");
  if (it == record.end() || !it->is_object())
    return {};
  const auto k = it->find("keyid");
  return (k != it->end() && k->is_string()) ? k->get<std::string>() : std::string{};
}

bool verify_record(const json &record, const public_key &key) {
  if (record_signer(record) != key.fingerprint())
    return false;
  const auto &s = record.at("signature");
  const auto sig_it = s.find("sig");
  if (sig_it == s.end() || !sig_it->is_string())
    return false;
  std::string sig;
  try {
    sig = base64_decode(sig_it->get<std::string>());
  } catch (const std::exception &) {
    return false;
  }
  json body = record;
  body.erase("signature");
  return key.verify(canonical_json(body), sig);
}

} // namespace prereg
