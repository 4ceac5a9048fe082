// `prereg audit`: every check re-derives what the report claims from data it does not trust.
#include "audit/audit.hpp"

#include "analysis/cell_stats.hpp"
#include "analysis/defects.hpp"
#include "base/fs.hpp"
#include "crypto/signed_json.hpp"
#include "model/report_model.hpp"
#include "report/report.hpp"
#include "report/report_text.hpp"
#include "spec/records.hpp"
#include "spec/shard.hpp"
#include "store/ledger.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace prereg {
namespace fs = std::filesystem;
namespace {

constexpr std::array<std::string_view, 10> check_names{
    "envelope", "payload", "protocol", "freeze", "statistics",
    "verdicts", "defects", "pages",    "ledger", "history"};

/// A check failed; the message is printed after `FAIL name:`.
struct check_failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string &why) { throw check_failed(why); }

std::string short_hash(const std::string &h) { return h.substr(0, 12); }

// ---- strict field access: a missing or mistyped field is a FAIL that names it -------------

const json &member(const json &j, std::string_view key, const std::string &where) {
  if (!j.is_object())
    fail(fmt::format("{} is not an object", where));
  const auto it = j.find(std::string(key));
  if (it == j.end())
    fail(fmt::format("missing field {}.{}", where, key));
  return *it;
}

/// `report.json` member at a dotted path, e.g. "protocol.freeze".
const json &at_path(const json &root, std::string_view dotted) {
  const json *cur = &root;
  std::string where = "report";
  std::size_t start = 0;
  while (start <= dotted.size()) {
    const auto dot = dotted.find('.', start);
    const auto key =
        dotted.substr(start, dot == std::string_view::npos ? dotted.npos : dot - start);
    cur = &member(*cur, key, where);
    where += '.'; // appended in two steps: "." + string trips GCC 12's -Wrestrict
    where += key;
    if (dot == std::string_view::npos)
      break;
    start = dot + 1;
  }
  return *cur;
}

std::string get_string(const json &j, const std::string &what) {
  if (!j.is_string())
    fail(fmt::format("{} is not a string", what));
  return j.get<std::string>();
}

std::int64_t get_int(const json &j, const std::string &what) {
  if (j.is_number_integer())
    return j.get<std::int64_t>();
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (std::nearbyint(d) == d && std::fabs(d) < 9.2e18)
      return static_cast<std::int64_t>(d);
  }
  fail(fmt::format("{} is not an integer", what));
}

const json &get_array(const json &j, const std::string &what) {
  if (!j.is_array())
    fail(fmt::format("{} is not an array", what));
  return j;
}

/// At most `max` characters of a JSON value, for messages.
std::string excerpt(const json &j, std::size_t max = 80) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > max)
    s = s.substr(0, max - 3) + "...";
  return s;
}

/// The differing members of two JSON objects, as "field: report X, recomputed Y".
std::string describe_difference(const json &recomputed, const json &reported) {
  std::vector<std::string> parts;
  for (const auto &path : changed_fields(recomputed, reported)) {
    const auto top = path.substr(0, path.find_first_of(".["));
    const bool both = recomputed.is_object() && reported.is_object() && recomputed.contains(top) &&
                      reported.contains(top);
    if (both && top == path)
      parts.push_back(fmt::format("{} is {} in the report, recomputed {}", path,
                                  excerpt(reported.at(top)), excerpt(recomputed.at(top))));
    else if (!reported.is_object() || !reported.contains(top))
      parts.push_back(fmt::format("{} is missing from the report", path));
    else
      parts.push_back(fmt::format("{} differs", path));
    if (parts.size() == 4)
      break;
  }
  if (parts.empty())
    return "differs";
  return fmt::format("{}", fmt::join(parts, "; "));
}

/// Joins at most `max` messages, saying how many were left out.
std::string join_some(const std::vector<std::string> &items, std::size_t max = 3) {
  std::vector<std::string> shown(
      items.begin(), items.begin() + static_cast<std::ptrdiff_t>(std::min(max, items.size())));
  std::string out = fmt::format("{}", fmt::join(shown, "; "));
  if (items.size() > max)
    out += fmt::format("; and {} more", items.size() - max);
  return out;
}

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

// ---- what the checks share ------------------------------------------------------------------

struct envelope_view {
  std::string payload_type;
  std::string payload; ///< base64-decoded
  json signatures;
};

class audit_context {
public:
  audit_context(fs::path dir, const store &s, const trust_root &trust,
                const std::vector<fs::path> &checkpoints)
      : m_dir(std::move(dir)), m_store(s), m_trust(trust), m_checkpoints(checkpoints) {
    const auto path = m_dir / "report.json";
    try {
      if (!fs::exists(path))
        throw std::runtime_error("report.json is missing");
      m_bytes = read_file(path);
      m_report = parse_json_strict(*m_bytes, path.string());
      if (!m_report->is_object()) {
        m_report.reset();
        throw std::runtime_error("report.json is not a JSON object");
      }
    } catch (const std::exception &e) {
      m_report_error = fmt::format("cannot read report.json: {}", e.what());
    }
    if (m_report)
      parse_members();
  }

  [[nodiscard]] const fs::path &dir() const { return m_dir; }

  /// Parses each member of the report on its own, so that a check fails only for the members
  /// it reads.
  void parse_members() {
    for (unsigned part = 1; part < report_part::all; part <<= 1) {
      try {
        const report_document one = report_from_json(*m_report, "", part);
        switch (part) {
        case report_part::schema_version:
          m_doc.schema_version = one.schema_version;
          break;
        case report_part::tool:
          m_doc.tool = one.tool;
          break;
        case report_part::protocol:
          m_doc.protocol = one.protocol;
          break;
        case report_part::run:
          m_doc.run = one.run;
          break;
        case report_part::environment:
          m_doc.environment = one.environment;
          break;
        case report_part::instrument:
          m_doc.instrument = one.instrument;
          break;
        case report_part::cells:
          m_doc.cells = one.cells;
          break;
        case report_part::correctness:
          m_doc.correctness = one.correctness;
          break;
        case report_part::predictions:
          m_doc.predictions = one.predictions;
          break;
        case report_part::defects:
          m_doc.defects = one.defects;
          break;
        case report_part::deviations:
          m_doc.deviations = one.deviations;
          break;
        case report_part::attempt:
          m_doc.attempt = one.attempt;
          break;
        default:
          break;
        }
      } catch (const error &e) {
        m_part_errors.emplace_back(part, e.what());
      }
    }
  }
  [[nodiscard]] const store &st() const { return m_store; }

  /// report.json's bytes (FAIL if unreadable).
  [[nodiscard]] const std::string &bytes() const {
    if (!m_bytes)
      fail(m_report_error);
    return *m_bytes;
  }
  /// report.json parsed strictly (FAIL if unreadable or not an object).
  [[nodiscard]] const json &report() const {
    if (!m_report)
      fail(m_report_error);
    return *m_report;
  }

  /// The signer's key as the trust root accepts it, or nullopt; remembers who signed.
  [[nodiscard]] std::optional<public_key> key(const std::string &fingerprint) const {
    auto k = m_trust.find(m_store, fingerprint);
    if (k && std::find(m_signers.begin(), m_signers.end(), fingerprint) == m_signers.end())
      m_signers.push_back(fingerprint);
    return k;
  }
  [[nodiscard]] const trust_root &trust() const { return m_trust; }
  [[nodiscard]] const std::vector<fs::path> &checkpoints() const { return m_checkpoints; }
  [[nodiscard]] const std::vector<std::string> &signers() const { return m_signers; }
  /// Where an unknown signer's key would have to be, for messages.
  [[nodiscard]] std::string key_source() const {
    return m_trust.pinned() ? "the keys pinned by " + m_trust.source
                            : (m_store.root() / "keys").string();
  }
  [[nodiscard]] key_lookup lookup() const {
    return [this](const std::string &fp) { return key(fp); };
  }

  [[nodiscard]] envelope_view envelope() const {
    const auto path = m_dir / "report.dsse.json";
    if (!fs::exists(path))
      fail("report.dsse.json is missing");
    const json env = parse_json_strict(read_file(path), path.string());
    envelope_view v;
    v.payload_type = get_string(member(env, "payloadType", "envelope"), "envelope.payloadType");
    const std::string encoded = get_string(member(env, "payload", "envelope"), "envelope.payload");
    try {
      v.payload = base64_decode(encoded);
    } catch (const std::exception &e) {
      fail(fmt::format("envelope.payload is not valid base64: {}", e.what()));
    }
    v.signatures = get_array(member(env, "signatures", "envelope"), "envelope.signatures");
    return v;
  }

  /// The report's members in `parts` (report_part bits), parsed once by the report model; FAIL
  /// with the first member that does not parse, naming its JSON path.
  [[nodiscard]] const report_document &doc(unsigned parts) const {
    (void)report();
    for (const auto &[part, why] : m_part_errors)
      if ((parts & part) != 0)
        fail(why);
    return m_doc;
  }

  [[nodiscard]] std::string hash() const { return doc(report_part::protocol).protocol.hash; }
  [[nodiscard]] protocol proto() const {
    try {
      return protocol_from_json(doc(report_part::protocol).protocol.body,
                                "report.json protocol.body");
    } catch (const check_failed &) {
      throw;
    } catch (const std::exception &e) {
      fail(fmt::format("protocol.body does not validate: {}", e.what()));
    }
  }
  /// The raw run rebuilt from the report's recorded data (a version-1 report's missing raw
  /// fields from its defects' evidence, where the defects parse).
  /// Every count is bounded first by the protocol's (a report's own numbers size the work):
  /// no more cells than the plan, no cell with more samples than the repetitions.
  [[nodiscard]] raw_run raw() const {
    const report_document &d =
        doc(report_part::schema_version | report_part::environment | report_part::instrument |
            report_part::correctness | report_part::cells);
    const protocol p = proto();
    const auto plan =
        static_cast<std::size_t>(p.arms.size() * p.passes.size() * p.rows.size() * p.cols.size());
    if (d.cells.size() > plan)
      fail(fmt::format("the report holds {} cells, more than the protocol's {}", d.cells.size(),
                       plan));
    if (d.correctness.size() > plan)
      fail(fmt::format("the report holds {} correctness records, more than the protocol's {} "
                       "cells",
                       d.correctness.size(), plan));
    for (std::size_t i = 0; i < d.cells.size(); ++i)
      if (d.cells[i].samples_ms.size() > static_cast<std::size_t>(p.measurement.repetitions))
        fail(fmt::format("cells[{}] holds {} samples, more than the protocol's {} repetitions", i,
                         d.cells[i].samples_ms.size(), p.measurement.repetitions));
    return report_to_raw(d);
  }

private:
  fs::path m_dir;
  const store &m_store;
  const trust_root &m_trust;
  const std::vector<fs::path> &m_checkpoints;
  mutable std::vector<std::string> m_signers; ///< accepted signers, in first-use order
  std::optional<std::string> m_bytes;
  std::optional<json> m_report;
  std::string m_report_error;
  report_document m_doc;                                       ///< every member that parsed
  std::vector<std::pair<unsigned, std::string>> m_part_errors; ///< those that did not, and why
};

// ---- the checks -------------------------------------------------------------------------------

std::string check_envelope(const audit_context &ctx) {
  const envelope_view env = ctx.envelope();
  if (env.payload_type != dsse_payload_type)
    fail(fmt::format("payloadType is '{}', not {}", env.payload_type, dsse_payload_type));
  if (env.signatures.empty())
    fail("the envelope holds no signature");
  const std::string pae = dsse_pae(env.payload_type, env.payload);
  std::vector<std::string> signers;
  for (std::size_t i = 0; i < env.signatures.size(); ++i) {
    const std::string w = fmt::format("envelope.signatures[{}]", i);
    const json &s = env.signatures[i];
    const std::string keyid = get_string(member(s, "keyid", w), w + ".keyid");
    const std::string sig_b64 = get_string(member(s, "sig", w), w + ".sig");
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
    signers.push_back(short_hash(keyid));
  }
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
  const std::string frozen_at =
      get_string(member(record, "frozen_at", "protocol.freeze"), "protocol.freeze.frozen_at");
  const std::string &started_at = ctx.doc(report_part::run).run.started_at;
  const auto fk = time_key(frozen_at);
  const auto sk = time_key(started_at);
  if (!fk)
    fail(fmt::format("frozen_at '{}' is not an RFC 3339 UTC time", frozen_at));
  if (!sk)
    fail(fmt::format("run.started_at '{}' is not an RFC 3339 UTC time", started_at));
  if (!(*fk < *sk))
    fail(fmt::format("frozen_at {} is not before the run's started_at {}", frozen_at, started_at));
  return fmt::format("freeze record equals the store's, signed by {}, frozen_at {} < started_at {}",
                     short_hash(signer), frozen_at, started_at);
}

/// FAILs unless the report's cells are plan cells in plan order and every plan cell that is
/// absent is named by a deviation (skipped).
void check_cell_coverage(const protocol &proto, const raw_run &raw,
                         const std::vector<report_deviation> &deviations,
                         const std::optional<shard_spec> &shard) {
  const auto plan = shard ? shard_cells(proto, *shard) : all_cells(proto); // a shard: its cells
  std::size_t next = 0;
  std::vector<bool> present(plan.size(), false);
  for (const auto &c : raw.cells) {
    const auto it = std::find(plan.begin() + static_cast<std::ptrdiff_t>(next), plan.end(), c.key);
    if (it == plan.end())
      fail(fmt::format("cell {} is not a cell of the protocol, or is out of order or repeated",
                       cell_label(c.key)));
    next = static_cast<std::size_t>(it - plan.begin()) + 1;
    present[next - 1] = true;
  }
  std::vector<cell_key> excused;
  for (const auto &d : deviations)
    if (d.cell)
      excused.push_back(*d.cell);
  for (std::size_t i = 0; i < plan.size(); ++i)
    if (!present[i] && std::find(excused.begin(), excused.end(), plan[i]) == excused.end())
      fail(fmt::format("cell {} of the protocol is neither in cells[] nor named by a deviation",
                       cell_label(plan[i])));
}

std::string check_statistics(const audit_context &ctx) {
  const protocol proto = ctx.proto();
  const raw_run raw = ctx.raw();
  const report_document &doc = ctx.doc(report_part::cells | report_part::deviations);
  std::optional<shard_spec> shard;
  if (const auto it = ctx.report().find("shard"); it != ctx.report().end()) {
    try {
      shard = shard_from_json(*it, "report.json");
    } catch (const error &e) {
      fail(e.what());
    }
  }
  check_cell_coverage(proto, raw, doc.deviations, shard);
  std::vector<std::string> bad;
  for (std::size_t i = 0; i < raw.cells.size(); ++i) {
    const cell_statistics st =
        compute_cell_statistics(raw.cells[i], proto, raw.instrument, raw.correctness);
    const json recomputed = to_json(to_report_cell(raw.cells[i], st, doc.schema_version));
    const json reported = to_json(doc.cells[i]);
    if (canonical_json(recomputed) != canonical_json(reported))
      bad.push_back(fmt::format("cells[{}] ({}): {}", i, cell_label(raw.cells[i].key),
                                describe_difference(recomputed, reported)));
  }
  if (!bad.empty())
    fail(join_some(bad));
  std::size_t samples = 0;
  for (const auto &c : raw.cells)
    samples += c.samples_ms.size();
  return fmt::format("{} cells ({} samples): every statistic recomputed from samples_ms equals "
                     "the report's",
                     raw.cells.size(), samples);
}

std::string check_verdicts(const audit_context &ctx) {
  const protocol proto = ctx.proto();
  const raw_run raw = ctx.raw();
  const std::string hash = ctx.hash();
  const auto &reported = ctx.doc(report_part::predictions).predictions;
  const std::vector<prediction_result> recomputed = judge_predictions(proto, hash, raw);
  if (reported.size() != recomputed.size())
    fail(fmt::format("the report holds {} predictions, the protocol has {}", reported.size(),
                     recomputed.size()));
  std::vector<std::string> bad;
  std::vector<std::string> verdicts;
  for (std::size_t i = 0; i < recomputed.size(); ++i) {
    const std::string &id = recomputed[i].id;
    verdicts.push_back(fmt::format("{} {}", id, to_string(recomputed[i].verdict)));
    const json mine = to_json(recomputed[i]);
    const json theirs = to_json(reported[i]);
    if (canonical_json(mine) != canonical_json(theirs))
      bad.push_back(
          fmt::format("predictions[{}] ({}): {}", i, id, describe_difference(mine, theirs)));
  }
  if (!bad.empty())
    fail(join_some(bad));
  return fmt::format("{} prediction(s) recomputed with the seeded bootstrap ({} resamples) equal "
                     "the report's: {}",
                     recomputed.size(), proto.analysis.bootstrap_resamples,
                     fmt::join(verdicts, ", "));
}

/// Codes the audit recomputes from the cells and the instrument, so a reported one must be
/// recomputed too: derivable_from_raw, and from schema_version 2 (whose cells carry clock_mhz
/// and harness_bytes_in_window) clock-throttle and harness-allocation, from schema_version 3
/// (off_window_ms) off-window-work, from schema_version 4 (the kernel clock's records)
/// kernel-records-dropped, kernel-above-step and no-arm-kernel.
bool derivable_from_cells(std::string_view code, int schema_version) {
  return derivable_from_raw(code) ||
         (schema_version >= 2 && (code == "clock-throttle" || code == "harness-allocation")) ||
         (schema_version >= 3 && code == "off-window-work") ||
         (schema_version >= 4 && (code == "kernel-records-dropped" || code == "kernel-above-step" ||
                                  code == "no-arm-kernel" || code == "graph-under-kernel-clock"));
}

/// Codes whose every input is in the report itself, so the audit requires them too.
bool derivable_from_report(std::string_view code, int schema_version) {
  return derivable_from_cells(code, schema_version) || code == "correctness-failure" ||
         code == "device-contention" || code == "flush-too-small";
}

std::string check_defects(const audit_context &ctx) {
  const protocol proto = ctx.proto();
  const raw_run raw = ctx.raw();
  const report_document &doc = ctx.doc(report_part::schema_version | report_part::defects);
  const std::vector<report_defect> &reported = doc.defects;
  const int version = doc.schema_version;
  const auto codes = defect_codes();
  std::set<std::string> have;
  for (std::size_t i = 0; i < reported.size(); ++i) {
    const std::string &code = reported[i].code;
    if (std::find(codes.begin(), codes.end(), code) == codes.end())
      fail(fmt::format("report.defects[{}] has the unknown code '{}'", i, message_excerpt(code)));
    have.insert(canonical_json(to_json(reported[i])));
  }
  const auto stats = compute_cell_statistics(proto, raw);
  const std::vector<report_defect> recomputed = detect_defects(proto, raw, stats);
  std::set<std::string> derived;
  std::vector<std::string> missing;
  std::size_t required = 0;
  for (const auto &d : recomputed) {
    if (!derivable_from_report(d.code, version))
      continue;
    ++required;
    const std::string bytes = canonical_json(to_json(d));
    derived.insert(bytes);
    if (!have.count(bytes))
      missing.push_back(fmt::format("{}{} is missing", d.code,
                                    d.cell ? " at " + cell_label(*d.cell) : std::string()));
  }
  if (!missing.empty())
    fail("recomputed defect(s) absent from the report: " + join_some(missing));
  std::vector<std::string> unsupported;
  for (const auto &d : reported) {
    const json j = to_json(d);
    if (derivable_from_cells(d.code, version) && !derived.count(canonical_json(j)))
      unsupported.push_back(fmt::format("{}: {}", d.code, excerpt(j, 120)));
  }
  if (!unsupported.empty())
    fail("the report holds defect(s) the raw data does not give: " + join_some(unsupported));
  return fmt::format("{} defect(s) recomputed from the raw data are all in the report ({} in all)",
                     required, reported.size());
}

std::string check_ledger(const audit_context &ctx) {
  const std::string hash = ctx.hash();
  const std::string run_id = get_string(at_path(ctx.report(), "run.run_id"), "report.run.run_id");
  const std::int64_t attempt = get_int(at_path(ctx.report(), "attempt"), "report.attempt");
  const std::string report_sha = sha256_hex(ctx.bytes());
  const ledger l = ctx.st().get_ledger();
  if (!fs::exists(l.path()))
    fail(fmt::format("there is no ledger {}", l.path().string()));
  std::size_t n = 0;
  try {
    n = l.verify(ctx.lookup());
  } catch (const error &e) {
    fail(fmt::format("the ledger does not verify: {}", e.line()));
  }
  const auto &entries = l.entries();
  std::int64_t position = 0;
  std::vector<const json *> starts;
  std::vector<const json *> completes;
  std::vector<const json *> aborts;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const json &e = entries[i];
    if (e.value("protocol_hash", "") != hash)
      continue;
    const std::string event = e.value("event", "");
    const bool mine = e.value("run_id", "") == run_id;
    if (event == ledger_event::run_start) {
      if (mine) {
        starts.push_back(&e);
        position = attempts_of(std::span(entries).first(i + 1), hash);
      }
    } else if (mine && event == ledger_event::run_complete) {
      completes.push_back(&e);
    } else if (mine && event == ledger_event::run_aborted) {
      aborts.push_back(&e);
    }
  }
  // The report is tied to its place: reports/<protocol id>/<run id>/.
  const fs::path folder = fs::absolute(ctx.dir()).lexically_normal();
  const std::string folder_name =
      (folder.has_filename() ? folder : folder.parent_path()).filename().string();
  const std::string parent_name =
      (folder.has_filename() ? folder : folder.parent_path()).parent_path().filename().string();
  if (folder_name != run_id)
    fail(fmt::format("the report folder is named {}, not its run.run_id {}", folder_name, run_id));
  const std::string protocol_id = ctx.proto().id;
  if (parent_name != protocol_id)
    fail(fmt::format("the report folder is in a folder named {}, not its protocol id {}",
                     parent_name, protocol_id));
  if (starts.empty())
    fail(fmt::format("the ledger holds no run-start for run {} of protocol {}", run_id,
                     short_hash(hash)));
  if (starts.size() > 1)
    fail(fmt::format("the ledger holds {} run-starts for run {}", starts.size(), run_id));
  if (completes.empty())
    fail(fmt::format("the ledger holds no run-complete for run {}", run_id));
  if (completes.size() > 1)
    fail(fmt::format("the ledger holds {} run-completes for run {}", completes.size(), run_id));
  if (!aborts.empty())
    fail(fmt::format("the ledger records run {} as aborted ({})", run_id,
                     aborts.front()->value("reason", "no reason")));
  const json &start = *starts.front();
  const json &complete = *completes.front();
  const auto seq = [](const json &e) { return e.value("seq", std::int64_t{0}); };
  if (seq(complete) <= seq(start))
    fail(fmt::format("run {} completes (seq {}) before it starts (seq {})", run_id, seq(complete),
                     seq(start)));
  const std::string recorded = complete.value("report_sha256", "");
  if (recorded != report_sha)
    fail(fmt::format("the run-complete entry (seq {}) records report_sha256 {}, but report.json "
                     "hashes to {}",
                     seq(complete), recorded.empty() ? "(none)" : recorded, report_sha));
  if (attempt != position)
    fail(fmt::format("the report says attempt {}, but the ledger makes run {} the run number {} "
                     "of this protocol",
                     attempt, run_id, position));
  for (const json *e : {&start, &complete})
    if (e->value("attempt", std::int64_t{-1}) != position)
      fail(fmt::format("ledger entry seq {} records attempt {}, not {}", seq(*e),
                       e->value("attempt", std::int64_t{-1}), position));
  std::string witnessed;
  if (const auto &head = ctx.doc(report_part::run).run.ledger_head) {
    if (head->seq + 1 != seq(start))
      fail(fmt::format("the report records ledger head seq {}, but its run-start is seq {}",
                       head->seq, seq(start)));
    const auto now =
        head->seq == 0 ? std::optional<std::string>(ledger_genesis) : l.line_hash(head->seq);
    if (now != head->sha256)
      fail(fmt::format("the report records ledger head seq {} with sha256 {}, which the ledger "
                       "no longer holds",
                       head->seq, short_hash(head->sha256)));
    witnessed = fmt::format("; the ledger still holds the head it extended (seq {})", head->seq);
  }
  std::vector<std::string> held;
  for (const auto &path : ctx.checkpoints()) {
    try {
      const json cp = parse_json_strict(read_file(path, 1 << 16), path.string());
      held.push_back(fmt::format("seq {}", check_checkpoint(l, cp, ctx.lookup(), path.string())));
    } catch (const error &e) {
      fail(fmt::format("checkpoint {}: {}", path.string(), e.what()));
    }
  }
  if (!held.empty())
    witnessed += fmt::format("; it holds checkpoint(s) {}", fmt::join(held, ", "));
  return fmt::format("ledger verifies ({} entries); run {} started at seq {} and completed at "
                     "seq {} with this report's sha256; attempt {}{}",
                     n, run_id, seq(start), seq(complete), attempt, witnessed);
}

/// The history of a protocol's runs in the ledger (docs/audit.md, `history`): the line that
/// lists every run, and what is wrong with the sequence of runs.
struct run_history {
  std::string line;                  ///< "run K of N; run 1 completed <time>, ..."
  std::vector<std::string> problems; ///< empty: the check passes
};

run_history read_history(const audit_context &ctx) {
  const std::string hash = ctx.hash();
  const std::string run_id = get_string(at_path(ctx.report(), "run.run_id"), "report.run.run_id");
  const std::int64_t attempt = get_int(at_path(ctx.report(), "attempt"), "report.attempt");
  const ledger l = ctx.st().get_ledger();
  if (!fs::exists(l.path()))
    fail(fmt::format("there is no ledger {}", l.path().string()));
  const auto &entries = l.entries(); // exit-3 errors (a cut or unparsable line) FAIL the check
  run_history h;
  const auto seq_text = [](const json &e) {
    const auto it = e.find("seq");
    return it == e.end() ? std::string("(none)") : it->dump();
  };
  const auto attempt_of = [](const json &e) -> std::optional<std::int64_t> {
    const auto it = e.find("attempt");
    if (it == e.end() || !it->is_number_integer())
      return std::nullopt;
    return it->get<std::int64_t>();
  };

  struct run {
    std::size_t start;             ///< index of its run-start in `entries`
    std::int64_t number;           ///< its attempt number: run-starts of this hash so far
    std::vector<std::size_t> ends; ///< indices of its run-complete / run-aborted entries
  };
  std::vector<std::pair<std::string, run>> runs;          // in run-start order
  std::unordered_map<std::string, std::size_t> run_index; // run id -> index in `runs`
  const auto find_run = [&](const std::string &id) -> run * {
    const auto it = run_index.find(id);
    return it == run_index.end() ? nullptr : &runs[it->second].second;
  };
  const std::vector<std::int64_t> numbers = attempt_numbers(entries, hash);
  bool frozen = false;
  std::optional<std::int64_t> last_seq;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const json &e = entries[i];
    if (!e.is_object()) {
      h.problems.push_back(fmt::format("ledger line {} is not a JSON object", i + 1));
      continue;
    }
    if (e.value("protocol_hash", "") != hash)
      continue;
    const auto seq = e.find("seq");
    if (seq == e.end() || !seq->is_number_integer() ||
        (last_seq && seq->get<std::int64_t>() <= *last_seq)) {
      h.problems.push_back(
          fmt::format("ledger line {} (seq {}) is out of seq order", i + 1, seq_text(e)));
    } else {
      last_seq = seq->get<std::int64_t>();
    }
    const std::string event = e.value("event", "");
    const std::string id = e.value("run_id", "");
    if (event == ledger_event::freeze || event == ledger_event::import) {
      frozen = true;
    } else if (event == ledger_event::run_start) {
      const std::int64_t number = numbers[i];
      if (!frozen)
        h.problems.push_back(
            fmt::format("the run-start at seq {} comes before any freeze of protocol {}",
                        seq_text(e), short_hash(hash)));
      const auto recorded = attempt_of(e);
      if (recorded != number)
        h.problems.push_back(fmt::format(
            "the run-start at seq {} records attempt {}, but it is run number {} of this protocol",
            seq_text(e), recorded ? std::to_string(*recorded) : std::string("(none)"), number));
      if (const run *dup = find_run(id))
        h.problems.push_back(fmt::format("run {} starts twice (seq {} and seq {})", id,
                                         seq_text(entries[dup->start]), seq_text(e)));
      else {
        run_index.emplace(id, runs.size());
        runs.push_back({id, run{i, number, {}}});
      }
    } else if (event == ledger_event::run_complete || event == ledger_event::run_aborted) {
      run *r = find_run(id);
      if (r == nullptr) {
        h.problems.push_back(fmt::format(
            "the {} at seq {} ends run {}, which has no earlier run-start of this protocol", event,
            seq_text(e), id.empty() ? "(no run_id)" : id));
        continue;
      }
      r->ends.push_back(i);
      const auto recorded = attempt_of(e);
      if (recorded != r->number)
        h.problems.push_back(
            fmt::format("the {} at seq {} records attempt {}, not {}", event, seq_text(e),
                        recorded ? std::to_string(*recorded) : "(none)", r->number));
      if (r->ends.size() == 2)
        h.problems.push_back(fmt::format("run {} ends twice (seq {} and seq {})", id,
                                         seq_text(entries[r->ends[0]]), seq_text(e)));
    }
  }

  std::vector<std::string> parts;
  std::int64_t mine = 0;  // this run's attempt number
  std::size_t mine_k = 0; // its place in the list
  for (const auto &[id, r] : runs) {
    const std::size_t k = parts.size() + 1;
    const json &s = entries[r.start];
    const std::string tag = id == run_id ? " (this report)" : "";
    if (id == run_id) {
      mine = r.number;
      mine_k = k;
    }
    if (r.ends.empty()) {
      parts.push_back(
          fmt::format("run {} started {} and has no end recorded{}", k, s.value("time", "?"), tag));
      continue;
    }
    const json &end = entries[r.ends.front()];
    if (end.value("event", "") == ledger_event::run_complete)
      parts.push_back(fmt::format("run {} completed {}{}", k, end.value("time", "?"), tag));
    else
      parts.push_back(fmt::format("run {} aborted at {} ({}){}", k, end.value("time", "?"),
                                  end.value("reason", "no reason"), tag));
  }
  if (mine == 0)
    h.problems.insert(h.problems.begin(),
                      fmt::format("this run ({}) has no run-start of protocol {} in the ledger",
                                  run_id, short_hash(hash)));
  else if (attempt != mine)
    h.problems.insert(h.problems.begin(),
                      fmt::format("the report says attempt {}, but its run-start is run number {} "
                                  "of this protocol",
                                  attempt, mine));
  if (parts.empty())
    h.line = fmt::format("the ledger holds no run of protocol {}", short_hash(hash));
  else
    h.line = fmt::format(
        "{}; {}",
        mine > 0 ? fmt::format("run {} of {}", mine_k, parts.size())
                 : fmt::format("this run is not in the ledger; {} run(s)", parts.size()),
        fmt::join(parts, ", "));
  return h;
}

/// One line: control characters (a newline in a message) are escaped.
std::string one_line(const std::string &s) { return escape_control(s); }

} // namespace

bool audit_result::passed() const {
  return !checks.empty() &&
         std::all_of(checks.begin(), checks.end(), [](const audit_check &c) { return c.passed; });
}

exit_code audit_result::exit() const { return passed() ? exit_code::ok : exit_code::audit_failed; }

std::vector<std::string> audit_result::failed() const {
  std::vector<std::string> out;
  for (const auto &c : checks)
    if (!c.passed)
      out.push_back(c.name);
  return out;
}

std::span<const std::string_view> audit_check_names() { return check_names; }

namespace {

/// The pages are a pure function of report.json: regenerated with the renderer the report
/// names (tool.renderer; absent is renderer 1), they must equal report.md and report.html
/// byte for byte.
std::string check_pages(const audit_context &ctx) {
  const report_document &doc = ctx.doc(report_part::all);
  const std::pair<const char *, std::string> pages[] = {{"report.md", render_markdown(doc)},
                                                        {"report.html", render_html(doc)}};
  for (const auto &[name, expected] : pages) {
    const fs::path path = ctx.dir() / name;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
      fail(fmt::format("{} is missing", name));
    const std::string actual = read_file(path);
    if (actual == expected)
      continue;
    std::size_t i = 0;
    while (i < actual.size() && i < expected.size() && actual[i] == expected[i])
      ++i;
    const auto line =
        1 + std::count(expected.begin(), expected.begin() + static_cast<long>(i), '\n');
    fail(fmt::format("{} is not the page renderer {} makes from report.json: first difference at "
                     "byte {} (line {}); `prereg report DIR` regenerates it",
                     name, doc.tool.renderer, i, line));
  }
  return fmt::format("report.md and report.html are exactly what renderer {} makes from "
                     "report.json",
                     doc.tool.renderer);
}

/// The refusal, if `dir` holds an exploratory report (`prereg try`), else nothing.
std::optional<std::string> exploratory_marker(const fs::path &dir) {
  try {
    const json j = parse_json_strict(read_file(dir / "report.json"), "report.json");
    if (j.is_object() && j.contains("exploratory"))
      return std::string("report.json is an EXPLORATORY report (prereg try): not pre-registered, "
                         "not signed and not in the ledger, so it is not audited as a "
                         "confirmatory report; freeze the protocol and `prereg run` it for one");
  } catch (const std::exception &) {
    // unreadable: the checks below say why
  }
  return std::nullopt;
}

} // namespace
audit_result audit_report(const fs::path &dir, const store &s,
                          const std::vector<public_key> &trusted) {
  if (trusted.empty())
    return audit_report(dir, s, resolve_trust({}, s));
  trust_root t;
  t.keys = trusted;
  t.source = "--trust";
  return audit_report(dir, s, t);
}

audit_result audit_report(const fs::path &dir, const store &s, const trust_root &trust,
                          const std::vector<fs::path> &checkpoints) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw invalid_input("no such report folder", dir.string());
  if (!fs::exists(dir / "report.json") && !fs::exists(dir / "report.dsse.json"))
    throw invalid_input("not a report folder: it holds neither report.json nor report.dsse.json",
                        dir.string());
  const audit_context ctx(dir, s, trust, checkpoints);
  audit_result result;
  result.report_dir = dir;
  if (const auto j = exploratory_marker(dir)) {
    // `prereg try` made it: nothing was pre-registered, so there is nothing to confirm.
    result.checks.push_back({"exploratory", false, *j});
    return result;
  }
  const std::array<std::function<std::string(const audit_context &)>, 9> checks{
      check_envelope, check_payload, check_protocol, check_freeze, check_statistics,
      check_verdicts, check_defects, check_pages,    check_ledger};
  for (std::size_t i = 0; i < checks.size(); ++i) {
    audit_check c{std::string(check_names[i]), false, {}};
    try {
      c.detail = checks[i](ctx);
      c.passed = true;
    } catch (const check_failed &e) {
      c.detail = e.what();
    } catch (const error &e) {
      c.detail = e.line();
    } catch (const std::exception &e) {
      c.detail = e.what();
    }
    c.detail = one_line(std::move(c.detail));
    result.checks.push_back(std::move(c));
  }
  audit_check history{std::string(check_names.back()), false, {}};
  try {
    const run_history h = read_history(ctx);
    result.history = h.line;
    history.passed = h.problems.empty();
    history.detail =
        history.passed ? h.line : fmt::format("{}; history: {}", join_some(h.problems), h.line);
  } catch (const check_failed &e) {
    result.history = fmt::format("history unavailable: {}", e.what());
    history.detail = e.what();
  } catch (const error &e) {
    result.history = fmt::format("history unavailable: {}", e.line());
    history.detail = e.line();
  } catch (const std::exception &e) {
    result.history = fmt::format("history unavailable: {}", e.what());
    history.detail = e.what();
  }
  result.history = one_line(std::move(result.history));
  history.detail = one_line(std::move(history.detail));
  result.checks.push_back(std::move(history));
  result.trust = one_line(trust.describe(s, ctx.signers()));
  return result;
}

std::string render_audit_text(const audit_result &r) {
  std::string out;
  for (const auto &c : r.checks)
    out += fmt::format("{} {}: {}\n", c.passed ? "PASS" : "FAIL", c.name, c.detail);
  const auto bad = r.failed();
  if (!r.trust.empty())
    out += fmt::format("trust: {}\n", r.trust);
  if (bad.empty())
    out += fmt::format("audit PASSED: all {} checks pass ({})\n", r.checks.size(),
                       r.report_dir.string());
  else
    out += fmt::format("audit FAILED: {} of {} checks failed: {} ({})\n", bad.size(),
                       r.checks.size(), fmt::join(bad, ", "), r.report_dir.string());
  return out;
}

std::string render_audit_json(const audit_result &r) {
  json checks = json::array();
  for (const auto &c : r.checks)
    checks.push_back({{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}});
  const json out = {{"report", r.report_dir.string()},
                    {"passed", r.passed()},
                    {"exit_code", static_cast<int>(r.exit())},
                    {"history", r.history},
                    {"trust", r.trust},
                    {"checks", checks}};
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace prereg
