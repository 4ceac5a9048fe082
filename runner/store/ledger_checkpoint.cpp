// The ledger's signed checkpoints and the attempt numbers of a protocol's runs.
#include "store/ledger.hpp"

#include "base/time.hpp"
#include "crypto/signed_json.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg {

json make_checkpoint(const ledger &l, const signing_key &key) {
  l.verify_for_append();
  const auto [seq, head] = l.head();
  if (seq == 0)
    throw integrity_error("the ledger is empty: nothing to checkpoint", l.path().string());
  return sign_record({{"checkpoint", "prereg-ledger-head"},
                      {"seq", seq},
                      {"head", head},
                      {"time", utc_now_rfc3339()},
                      {"signer", key.fingerprint()}},
                     key);
}

std::int64_t check_checkpoint(const ledger &l, const json &cp, const key_lookup &keys,
                              const std::string &where) {
  if (!cp.is_object() || cp.value("checkpoint", "") != "prereg-ledger-head" ||
      !cp.contains("seq") || !cp["seq"].is_number_integer() || !cp.contains("head") ||
      !cp["head"].is_string())
    throw integrity_error("not a prereg ledger checkpoint", where);
  const std::string signer = record_signer(cp);
  const auto key = signer.empty() || !keys ? std::nullopt : keys(signer);
  if (!key)
    throw integrity_error(fmt::format("the checkpoint is signed by an unknown key {}",
                                      signer.empty() ? "(none)" : signer),
                          where);
  if (!verify_record(cp, *key))
    throw integrity_error("the checkpoint's signature does not verify (edited)", where);
  const auto seq = cp["seq"].get<std::int64_t>();
  const std::string head = cp["head"].get<std::string>();
  const auto now = l.line_hash(seq);
  if (!now)
    throw integrity_error(fmt::format("the ledger no longer reaches checkpoint seq {} (it has {} "
                                      "entries): entries were cut from its end",
                                      seq, l.head().first),
                          where);
  if (*now != head)
    throw integrity_error(fmt::format("ledger line {} no longer hashes to checkpoint head {} "
                                      "(rewritten)",
                                      seq, head.substr(0, 12)),
                          where);
  return seq;
}

namespace {

/// What counts as an attempt: a run-start entry of the protocol.
bool is_run_start_of(const json &e, std::string_view protocol_hash) {
  return e.is_object() && e.value("event", "") == ledger_event::run_start &&
         e.value("protocol_hash", "") == protocol_hash;
}

} // namespace

std::int64_t attempts_of(std::span<const json> entries, std::string_view protocol_hash) {
  return static_cast<std::int64_t>(
      std::count_if(entries.begin(), entries.end(),
                    [&](const json &e) { return is_run_start_of(e, protocol_hash); }));
}

std::int64_t next_attempt(std::span<const json> entries, std::string_view protocol_hash) {
  return attempts_of(entries, protocol_hash) + 1;
}

std::vector<std::int64_t> attempt_numbers(std::span<const json> entries,
                                          std::string_view protocol_hash) {
  std::vector<std::int64_t> out(entries.size(), 0);
  std::int64_t seen = 0;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (is_run_start_of(entries[i], protocol_hash))
      out[i] = ++seen;
  return out;
}

} // namespace prereg
