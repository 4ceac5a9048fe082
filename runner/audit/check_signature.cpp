// The `envelope` and `payload` checks: the DSSE signatures and the bytes they sign.
#include "audit/checks.hpp"

#include "crypto/crypto.hpp"
#include "report/report.hpp"

#include <fmt/format.h>

namespace prereg::audit_detail {
namespace {

/// Verifies signature `i` of the envelope over `pae`; returns its signer's short hash.
std::string verify_signature(const audit_context &ctx, const json_node &s, std::size_t i,
                             const std::string &pae) {
  const std::string keyid = s["keyid"].str();
  const std::string sig_b64 = s["sig"].str();
  const auto key = ctx.key(keyid);
  if (!key)
    fail(fmt::format("signature {} is by an unknown key {} (not in {})", i,
                     keyid.empty() ? "(empty keyid)" : keyid, ctx.key_source()));
  std::string sig;
  try {
    sig = base64_decode(sig_b64);
  } catch (const std::exception &) {
    fail(fmt::format("signature {} is not valid base64", i));
  }
  if (!key->verify(pae, sig))
    fail(fmt::format("signature {} by {} does not verify over the DSSE PAE of the payload", i,
                     short_hash(keyid)));
  return short_hash(keyid);
}

} // namespace

std::string check_envelope(const audit_context &ctx) {
  const envelope_view env = ctx.envelope();
  if (env.payload_type != dsse_payload_type)
    fail(fmt::format("payloadType is '{}', not {}", env.payload_type, dsse_payload_type));
  if (env.signatures.empty())
    fail("the envelope holds no signature");
  const std::string pae = dsse_pae(env.payload_type, env.payload);
  const json_node signatures = read_strictly(env.signatures, "envelope.signatures");
  std::vector<std::string> signers;
  for (std::size_t i = 0; i < signatures.array_size(); ++i)
    signers.push_back(verify_signature(ctx, signatures.at(i), i, pae));
  return fmt::format("{} signature(s) by {} verify over DSSE PAE ({})", signers.size(),
                     fmt::join(signers, ", "), dsse_payload_type);
}

std::string check_payload(const audit_context &ctx) {
  const std::string &bytes = ctx.bytes();
  std::string payload;
  try {
    payload = ctx.envelope().payload;
  } catch (const std::exception &e) {
    fail(fmt::format("cannot read the envelope's payload: {}", e.what()));
  }
  if (payload != bytes) {
    std::size_t i = 0;
    while (i < payload.size() && i < bytes.size() && payload[i] == bytes[i])
      ++i;
    fail(fmt::format("report.json ({} bytes, sha256 {}) is not the signed payload ({} bytes, "
                     "sha256 {}); first difference at byte {}",
                     bytes.size(), short_hash(sha256_hex(bytes)), payload.size(),
                     short_hash(sha256_hex(payload)), i));
  }
  if (canonical_json(ctx.report()) != bytes)
    fail("report.json is not in RFC 8785 canonical form");
  try {
    check_report_members(ctx.report(), "");
  } catch (const error &e) {
    fail(e.what());
  }
  return fmt::format("report.json ({} bytes, sha256 {}) is the signed payload, in canonical form "
                     "(schema_version {})",
                     bytes.size(), short_hash(sha256_hex(bytes)),
                     ctx.doc(report_part::schema_version).schema_version);
}

} // namespace prereg::audit_detail
