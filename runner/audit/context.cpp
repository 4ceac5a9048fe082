// The audit's shared reading of a report folder, its strict reader and its message helpers.
#include "audit/context.hpp"

#include "base/fs.hpp"
#include "crypto/crypto.hpp"
#include "report/report.hpp"
#include "spec/operation_file.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace prereg::audit_detail {
namespace fs = std::filesystem;

void fail(const std::string &why) { throw check_failed(why); }

void check_fault::fail(const std::string &path, std::string_view problem) const {
  if (problem == "is missing")
    throw check_failed(fmt::format("missing field {}", path));
  throw check_failed(fmt::format("{} {}", path, problem));
}

json_node read_strictly(const json &j, std::string path) {
  static const check_fault fault;
  return {j, std::move(path), fault};
}

std::int64_t any_integer(const json_node &n) {
  const json &j = n.value();
  if (j.is_number_integer())
    return j.get<std::int64_t>();
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (std::nearbyint(d) == d && std::fabs(d) < 9.2e18)
      return static_cast<std::int64_t>(d);
  }
  n.fail("is not an integer");
}

std::string short_hash(const std::string &h) { return h.substr(0, 12); }

std::string excerpt(const json &j, std::size_t max) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > max)
    s = s.substr(0, max - 3) + "...";
  return s;
}

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

std::string join_some(const std::vector<std::string> &items, std::size_t max) {
  std::vector<std::string> shown(
      items.begin(), items.begin() + static_cast<std::ptrdiff_t>(std::min(max, items.size())));
  std::string out = fmt::format("{}", fmt::join(shown, "; "));
  if (items.size() > max)
    out += fmt::format("; and {} more", items.size() - max);
  return out;
}

const prepared_ledger &audit_context::prepared() const {
  if (m_prepared != nullptr)
    return *m_prepared;
  if (!m_own_ledger)
    m_own_ledger = prepare_ledger(m_store, m_trust);
  return *m_own_ledger;
}

audit_context::audit_context(fs::path dir, const store &s, const trust_root &trust,
                             const std::vector<fs::path> &checkpoints,
                             const prepared_ledger *prepared)
    : m_dir(std::move(dir)), m_store(s), m_trust(trust), m_checkpoints(checkpoints),
      m_prepared(prepared) {
  read_report();
  if (m_report)
    parse_members();
}

void audit_context::read_report() {
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
}

/// Parses each member of the report on its own, so that a check fails only for the members
/// it reads.
void audit_context::parse_members() {
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
      case report_part::phases:
        m_doc.phases = one.phases;
        break;
      default:
        break;
      }
    } catch (const error &e) {
      m_part_errors.emplace_back(part, e.what());
    }
  }
}

const std::string &audit_context::bytes() const {
  if (!m_bytes)
    fail(m_report_error);
  return *m_bytes;
}

const json &audit_context::report() const {
  if (!m_report)
    fail(m_report_error);
  return *m_report;
}

std::optional<public_key> audit_context::key(const std::string &fingerprint) const {
  auto k = m_trust.find(m_store, fingerprint);
  if (k && std::find(m_signers.begin(), m_signers.end(), fingerprint) == m_signers.end())
    m_signers.push_back(fingerprint);
  return k;
}

std::string audit_context::key_source() const {
  return m_trust.pinned() ? "the keys pinned by " + m_trust.source
                          : (m_store.root() / "keys").string();
}

key_lookup audit_context::lookup() const {
  return [this](const std::string &fp) { return key(fp); };
}

envelope_view audit_context::envelope() const {
  const auto path = m_dir / "report.dsse.json";
  if (!fs::exists(path))
    fail("report.dsse.json is missing");
  const json env = parse_json_strict(read_file(path), path.string());
  const json_node n = read_strictly(env, "envelope");
  envelope_view v;
  v.payload_type = n["payloadType"].str();
  const std::string encoded = n["payload"].str();
  try {
    v.payload = base64_decode(encoded);
  } catch (const std::exception &e) {
    fail(fmt::format("envelope.payload is not valid base64: {}", e.what()));
  }
  const json_node signatures = n["signatures"];
  (void)signatures.array_size();
  v.signatures = signatures.value();
  return v;
}

const report_document &audit_context::doc(unsigned parts) const {
  (void)report();
  for (const auto &[part, why] : m_part_errors)
    if ((parts & part) != 0)
      fail(why);
  return m_doc;
}

protocol audit_context::proto() const {
  try {
    // An operation file's report: the descriptor its freeze record pins, registered so that the
    // bytes model and the checks below re-derive from it (docs/operations.md); no Python runs.
    (void)register_recorded_operation(doc(report_part::protocol).protocol.freeze,
                                      m_store.project_root(), "report.json protocol.freeze");
    return protocol_from_json(doc(report_part::protocol).protocol.body,
                              "report.json protocol.body");
  } catch (const check_failed &) {
    throw;
  } catch (const std::exception &e) {
    fail(fmt::format("protocol.body does not validate: {}", e.what()));
  }
}

raw_run audit_context::raw() const {
  const report_document &d =
      doc(report_part::schema_version | report_part::environment | report_part::instrument |
          report_part::correctness | report_part::cells);
  const protocol p = proto();
  const auto plan = static_cast<std::size_t>(p.arms.size() * p.passes.size() * p.shape_count());
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

} // namespace prereg::audit_detail
