// The ledger read and verified once for many audits (prepared_ledger.hpp).
#include "audit/prepared_ledger.hpp"

#include "prereg/error.hpp"
#include "store/ledger.hpp"
#include "store/store.hpp"
#include "store/trust.hpp"

#include <exception>

namespace prereg {
namespace {

/// The text a check gives for an exception that escapes it (audit.cpp's run_check).
std::string failure_text(const std::exception &e) {
  if (const auto *err = dynamic_cast<const error *>(&e))
    return err->line();
  return e.what();
}

/// True when no scan of `entries` can throw: each is an object whose event, protocol_hash and
/// run_id are strings where present; fills `by_hash`.
bool index_entries(const std::vector<json> &entries,
                   std::unordered_map<std::string, std::vector<std::size_t>> &by_hash) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const json &e = entries[i];
    if (!e.is_object())
      return false;
    for (const char *key : {"event", "protocol_hash", "run_id"})
      if (e.contains(key) && !e[key].is_string())
        return false;
    by_hash[e.value("protocol_hash", "")].push_back(i);
  }
  return true;
}

} // namespace

const std::vector<std::size_t> &prepared_ledger::of(const std::string &hash) const {
  static const std::vector<std::size_t> none;
  const auto it = by_hash.find(hash);
  return it == by_hash.end() ? none : it->second;
}

std::optional<std::string> prepared_ledger::line_hash(std::int64_t seq) const {
  if (seq < 1 || static_cast<std::size_t>(seq) > line_hashes.size())
    return std::nullopt;
  return line_hashes[static_cast<std::size_t>(seq) - 1];
}

prepared_ledger prepare_ledger(const store &s, const trust_root &trust) {
  prepared_ledger p;
  const ledger l = s.get_ledger();
  try {
    p.verified = l.verify([&](const std::string &fp) {
      p.lookups.push_back(fp);
      return trust.find(s, fp);
    });
  } catch (const error &e) {
    p.verify_failure = "the ledger does not verify: " + e.line();
  } catch (const std::exception &e) {
    p.verify_failure = e.what();
  }
  try {
    p.entries = l.entries();
    for (std::size_t seq = 1; seq <= p.entries.size(); ++seq)
      p.line_hashes.push_back(l.line_hash(static_cast<std::int64_t>(seq)).value_or(""));
  } catch (const std::exception &e) {
    p.entries_failure = failure_text(e);
    p.entries.clear();
    p.line_hashes.clear();
  }
  p.indexed = !p.entries_failure && index_entries(p.entries, p.by_hash);
  if (!p.indexed)
    p.by_hash.clear();
  return p;
}

} // namespace prereg
