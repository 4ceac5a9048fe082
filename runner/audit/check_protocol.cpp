// The `protocol` and `freeze` checks: the report's protocol is the store's frozen one, frozen
// before the run.
#include "audit/checks.hpp"

#include "base/fs.hpp"
#include "crypto/crypto.hpp"
#include "crypto/signed_json.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <optional>

namespace prereg::audit_detail {
namespace fs = std::filesystem;
namespace {

/// "YYYYMMDDHHMMSS" + 9 fraction digits of an RFC 3339 UTC time ("...Z"), comparable as text.
std::optional<std::string> time_key(const std::string &t) {
  // YYYY-MM-DDTHH:MM:SS[.frac]Z
  if (t.size() < 20 || t.back() != 'Z')
    return std::nullopt;
  const std::string_view pattern = "dddd-dd-ddTdd:dd:dd";
  std::string key;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = t[i];
    if (pattern[i] == 'd') {
      if (c < '0' || c > '9')
        return std::nullopt;
      key += c;
    } else if (c != pattern[i]) {
      return std::nullopt;
    }
  }
  std::string frac;
  std::size_t i = pattern.size();
  if (t[i] == '.') {
    for (++i; i < t.size() - 1; ++i) {
      if (t[i] < '0' || t[i] > '9')
        return std::nullopt;
      frac += t[i];
    }
    if (frac.empty() || frac.size() > 9)
      return std::nullopt;
  }
  if (i != t.size() - 1)
    return std::nullopt;
  frac.resize(9, '0');
  return key + frac;
}

/// FAILs unless the freeze record was made before the run started; returns frozen_at.
std::string check_frozen_before(const audit_context &ctx, const json &record) {
  const std::string frozen_at = read_strictly(record, "protocol.freeze")["frozen_at"].str();
  const std::string &started_at = ctx.doc(report_part::run).run.started_at;
  const auto fk = time_key(frozen_at);
  const auto sk = time_key(started_at);
  if (!fk)
    fail(fmt::format("frozen_at '{}' is not an RFC 3339 UTC time", frozen_at));
  if (!sk)
    fail(fmt::format("run.started_at '{}' is not an RFC 3339 UTC time", started_at));
  if (!(*fk < *sk))
    fail(fmt::format("frozen_at {} is not before the run's started_at {}", frozen_at, started_at));
  return frozen_at;
}

} // namespace

std::string check_protocol(const audit_context &ctx) {
  const std::string hash = ctx.hash();
  const json &body = ctx.doc(report_part::protocol).protocol.body;
  const std::string canonical = canonical_json(body);
  if (const auto h = protocol_hash(body); h != hash)
    fail(fmt::format("protocol.body hashes to {}, not to protocol.hash {}", h, hash));
  if (!is_full_hash(hash))
    fail(fmt::format("protocol.hash '{}' is not a SHA-256 hex", hash));
  const auto stored_path = ctx.st().protocol_dir(hash) / "protocol.json";
  if (!fs::exists(stored_path))
    fail(fmt::format("the store {} holds no frozen protocol {}", ctx.st().root().string(), hash));
  const std::string stored = read_file(stored_path);
  if (sha256_hex(stored) != hash)
    fail(fmt::format("the store's copy {} is corrupted: it no longer hashes to its name",
                     stored_path.string()));
  if (stored != canonical)
    fail(fmt::format("protocol.body differs from the frozen copy {}", stored_path.string()));
  (void)ctx.proto();
  return fmt::format("body hashes to {}, equals the frozen copy and re-validates",
                     short_hash(hash));
}

std::string check_freeze(const audit_context &ctx) {
  const std::string hash = ctx.hash();
  const json &record = ctx.doc(report_part::protocol).protocol.freeze;
  if (!is_full_hash(hash))
    fail(fmt::format("protocol.hash '{}' is not a SHA-256 hex", hash));
  const auto path = ctx.st().protocol_dir(hash) / "freeze.json";
  if (!fs::exists(path))
    fail(fmt::format("the store {} holds no freeze record for {}", ctx.st().root().string(), hash));
  const json stored = parse_json_strict(read_file(path), path.string());
  if (canonical_json(record) != canonical_json(stored))
    fail(fmt::format("the report's freeze record differs from {}: {}", path.string(),
                     describe_difference(stored, record)));
  if (record.value("protocol_hash", "") != hash)
    fail("the freeze record does not name this protocol's hash");
  const std::string signer = record_signer(record);
  if (signer.empty())
    fail("the freeze record is not signed");
  const auto key = ctx.key(signer);
  if (!key)
    fail(fmt::format("the freeze record is signed by an unknown key {} (not in {})", signer,
                     ctx.key_source()));
  if (!verify_record(record, *key))
    fail("the freeze record's signature does not verify");
  const std::string frozen_at = check_frozen_before(ctx, record);
  return fmt::format("freeze record equals the store's, signed by {}, frozen_at {} < started_at {}",
                     short_hash(signer), frozen_at, ctx.doc(report_part::run).run.started_at);
}

} // namespace prereg::audit_detail
