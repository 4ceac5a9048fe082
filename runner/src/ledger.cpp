// The hash-chained, signed, append-only ledger.
#include "prereg/ledger.hpp"

#include "prereg/error.hpp"
#include "prereg/fs.hpp"
#include "prereg/signed_json.hpp"

#include <fmt/format.h>

#include <chrono>
#include <ctime>

namespace prereg {

std::string utc_now_rfc3339() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const auto secs = time_point_cast<seconds>(now);
  const auto micros = duration_cast<microseconds>(now - secs).count();
  const std::time_t t = system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:06d}Z", buf, micros);
}

std::vector<std::string> ledger::lines() const {
  std::vector<std::string> out;
  if (!std::filesystem::exists(m_file)) return out;
  const std::string text = read_file(m_file);
  std::size_t start = 0;
  while (start < text.size()) {
    const auto nl = text.find('\n', start);
    if (nl == std::string::npos) {
      throw integrity_error(fmt::format("ledger line {} has no final newline (truncated write?)",
                                        out.size() + 1),
                            m_file.string());
    }
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

std::vector<json> ledger::entries() const {
  std::vector<json> out;
  const auto ls = lines();
  for (std::size_t i = 0; i < ls.size(); ++i) {
    try {
      out.push_back(parse_json_strict(ls[i], m_file.string()));
    } catch (const error &e) {
      throw integrity_error(fmt::format("ledger line {} is not valid JSON: {}", i + 1, e.what()),
                            fmt::format("{}:{}", m_file.string(), i + 1));
    }
  }
  return out;
}

json ledger::append(json fields, const signing_key &key) {
  const auto ls = lines();
  std::string text;
  for (const auto &l : ls) text += l + "\n";
  fields["seq"] = ls.size() + 1;
  fields["time"] = utc_now_rfc3339();
  fields["prev"] = ls.empty() ? ledger_genesis : sha256_hex(ls.back());
  fields["signer"] = key.fingerprint();
  json entry = sign_record(std::move(fields), key);
  text += canonical_json(entry) + "\n";
  write_file_atomic(m_file, text);
  return entry;
}

std::size_t ledger::verify(const key_lookup &keys) const {
  const auto ls = lines();
  std::string prev = ledger_genesis;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const std::size_t expected_seq = i + 1;
    const std::string where = fmt::format("{}:{}", m_file.string(), expected_seq);
    json e;
    try {
      e = parse_json_strict(ls[i], m_file.string());
    } catch (const error &) {
      throw integrity_error(fmt::format("ledger entry seq {} is not valid JSON", expected_seq),
                            where);
    }
    if (!e.is_object() || !e.contains("seq") || !e["seq"].is_number_integer() ||
        e["seq"].get<std::int64_t>() != static_cast<std::int64_t>(expected_seq))
      throw integrity_error(
          fmt::format("ledger entry seq {} is out of order (deleted, inserted or reordered)",
                      expected_seq),
          where);
    if (!e.contains("prev") || e["prev"] != prev)
      throw integrity_error(
          fmt::format("ledger entry seq {} does not chain to the previous entry", expected_seq),
          where);
    if (canonical_json(e) != ls[i])
      throw integrity_error(fmt::format("ledger entry seq {} is not in canonical form (edited)",
                                        expected_seq),
                            where);
    const std::string signer = record_signer(e);
    const auto key = signer.empty() ? std::nullopt : keys(signer);
    if (!key)
      throw integrity_error(fmt::format("ledger entry seq {} is signed by an unknown key {}",
                                        expected_seq, signer.empty() ? "(none)" : signer),
                            where);
    if (!verify_record(e, *key))
      throw integrity_error(
          fmt::format("ledger entry seq {} has an invalid signature (edited)", expected_seq),
          where);
    prev = sha256_hex(ls[i]);
  }
  return ls.size();
}

} // namespace prereg
