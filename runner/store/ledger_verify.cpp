// The ledger's verification: seq order, the prev chain, canonical form and signatures, line by
// line, over the per-user verified-prefix cache (ledger_prefix_cache.cpp).
#include "store/ledger_cache.hpp"

#include "base/fs.hpp"
#include "crypto/signed_json.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

namespace prereg {
namespace {

/// Each signer's key, looked up once (a lookup may read and parse a key file).
class signer_keys {
public:
  signer_keys(const key_lookup &keys, const signing_key *own) : m_keys(keys), m_own(own) {}

  [[nodiscard]] const std::optional<public_key> &of(const std::string &signer) {
    auto it = m_known.find(signer);
    if (it == m_known.end()) {
      std::optional<public_key> k;
      if (m_own != nullptr && signer == m_own->fingerprint())
        k = m_own->public_part(); // the key appending now vouches for its own entries
      else if (!signer.empty() && m_keys)
        k = m_keys(signer);
      it = m_known.emplace(signer, std::move(k)).first;
    }
    return it->second;
  }

private:
  const key_lookup &m_keys;
  const signing_key *m_own;
  std::map<std::string, std::optional<public_key>> m_known;
};

/// Line i's entry: the parsed one when `c` has them, else parsed into `local` (exit 3 if it is
/// not JSON).
const json &entry_at(const ledger::cache &c, std::size_t i, const std::filesystem::path &file,
                     const std::string &prefix, const std::string &where, json &local) {
  if (c.parsed)
    return c.entries[i];
  try {
    local = parse_json_strict(c.lines[i], file.string());
  } catch (const error &) {
    throw integrity_error(fmt::format("{}ledger entry seq {} is not valid JSON", prefix, i + 1),
                          where);
  }
  return local;
}

/// The entry of line `line` is seq `seq`, chains to `prev` and is in canonical form (exit 3).
void check_chain(const json &e, const std::string &line, std::size_t seq, const std::string &prev,
                 const std::string &prefix, const std::string &where) {
  if (!e.is_object() || !e.contains("seq") || !e["seq"].is_number_integer() ||
      e["seq"].get<std::int64_t>() != static_cast<std::int64_t>(seq))
    throw integrity_error(
        fmt::format("{}ledger entry seq {} is out of order (deleted, inserted or reordered)",
                    prefix, seq),
        where);
  if (!e.contains("prev") || e["prev"] != prev)
    throw integrity_error(fmt::format("{}ledger entry seq {} does not chain to the previous "
                                      "entry",
                                      prefix, seq),
                          where);
  if (canonical_json(e) != line)
    throw integrity_error(
        fmt::format("{}ledger entry seq {} is not in canonical form (edited)", prefix, seq), where);
}

/// The entry is signed by a known key and its signature verifies (exit 3); returns the signer.
std::string check_signature(const json &e, signer_keys &keys, std::size_t seq,
                            const std::string &prefix, const std::string &where) {
  const std::string signer = record_signer(e);
  const auto &key = keys.of(signer);
  if (!key)
    throw integrity_error(fmt::format("{}ledger entry seq {} is signed by an unknown key {}",
                                      prefix, seq, signer.empty() ? "(none)" : signer),
                          where);
  if (!verify_record(e, *key))
    throw integrity_error(
        fmt::format("{}ledger entry seq {} has an invalid signature (edited)", prefix, seq), where);
  return signer;
}

} // namespace

void ledger_detail::verify_lines(ledger::cache &c, const std::filesystem::path &file,
                                 const key_lookup &keys, std::size_t from,
                                 const std::string &prefix, const signing_key *own) {
  const auto &ls = c.lines;
  signer_keys known(keys, own);
  const bool checks_signatures = keys || own != nullptr;
  const bool whole = from == 0;
  std::vector<std::string> signers;
  if (from > 0 && from == c.verified)
    signers = c.signers;
  if (whole && checks_signatures)
    from = ledger_detail::cached_prefix(
        file, ls, [&](const std::string &fp) { return known.of(fp).has_value(); }, signers);
  std::string prev = from == 0 ? ledger_genesis : sha256_hex(ls[from - 1]);
  for (std::size_t i = from; i < ls.size(); ++i) {
    const std::size_t expected_seq = i + 1;
    const std::string where = fmt::format("{}:{}", file.string(), expected_seq);
    json local;
    const json &e = entry_at(c, i, file, prefix, where, local);
    check_chain(e, ls[i], expected_seq, prev, prefix, where);
    if (checks_signatures) { // a ledger handle without keys checks the chain only
      const std::string signer = check_signature(e, known, expected_seq, prefix, where);
      if (std::find(signers.begin(), signers.end(), signer) == signers.end())
        signers.push_back(signer);
    }
    prev = sha256_hex(ls[i]);
  }
  if (!checks_signatures)
    return;
  if (from < ls.size() || whole)
    ledger_detail::store_prefix(file, ls, signers);
  c.signers = signers;
  if (from == c.verified || whole)
    c.verified = std::max(c.verified, ls.size());
}

std::size_t ledger::verify(const key_lookup &keys) const {
  cache &c = current();
  const std::size_t was_verified = c.verified;
  const key_lookup none = [](const std::string &) { return std::optional<public_key>(); };
  ledger_detail::verify_lines(c, m_file, keys ? keys : none, 0, "");
  c.verified = was_verified; // verified with `keys`, which need not be the append keys
  return c.lines.size();
}

void ledger::verify_for_append(const signing_key *own) const {
  cache &c = current();
  ledger_detail::verify_lines(c, m_file, m_append_keys, c.verified, "refusing to append: ", own);
}

} // namespace prereg
