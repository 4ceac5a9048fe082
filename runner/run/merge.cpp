// `prereg merge`: the rules of a merge, the merged report (a pure function of its parts), its
// pages, and its audit, which rebuilds it from the parts it keeps.
#include "run/merge.hpp"

#include "base/fs.hpp"
#include "base/time.hpp"
#include "model/report_model.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"
#include "report/report.hpp"
#include "run/run.hpp"
#include "spec/shard.hpp"
#include "store/ledger.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <random>
#include <set>

namespace prereg {
namespace fs = std::filesystem;
namespace {

/// One part as read from its folder (already audited).
struct part {
  fs::path dir;
  std::string bytes; ///< report.json
  json raw;          ///< report.json parsed
  report_document doc;
};

part read_part(const fs::path &dir) {
  part p;
  p.dir = dir;
  const fs::path file = dir / "report.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw invalid_input("not a report folder: it has no report.json", dir.string());
  p.bytes = read_file(file);
  p.raw = parse_json_strict(p.bytes, file.string());
  if (p.raw.is_object() && p.raw.contains("merge_version"))
    throw invalid_input("a merged report cannot be a part of another merge", dir.string());
  p.doc = report_from_json(p.raw, file.string());
  return p;
}

std::string kind_name(merge_kind k) { return k == merge_kind::shards ? "shards" : "replication"; }

std::string device_of(const part &p) { return p.doc.environment.value("device_name", "unknown"); }

std::string list_some(const std::vector<std::string> &items, std::size_t max = 8) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < max; ++i) {
    if (i != 0)
      out += ", ";
    out += items[i];
  }
  if (items.size() > max)
    out += fmt::format(" and {} more", items.size() - max);
  return out;
}

/// Checks the rules of a merge of `parts` (integrity refusals are exit 3) and puts the parts in
/// their order: shards by index, replications by run id.
void check_rules(std::vector<part> &parts, merge_kind kind, const protocol &proto) {
  if (parts.empty())
    throw invalid_input("merge: give at least one report folder");
  const std::string hash = parts.front().doc.protocol.hash;
  std::set<std::string> run_ids;
  for (const auto &p : parts) {
    if (p.doc.protocol.hash != hash)
      throw integrity_error(fmt::format("the parts are runs of different protocols: {} and {}",
                                        hash.substr(0, 12), p.doc.protocol.hash.substr(0, 12)),
                            p.dir.string());
    if (p.doc.exploratory)
      throw integrity_error("an EXPLORATORY report cannot be merged", p.dir.string());
    if (!run_ids.insert(p.doc.run.run_id).second)
      throw integrity_error(fmt::format("run {} is given twice", p.doc.run.run_id), p.dir.string());
  }
  if (kind == merge_kind::replication) {
    if (!proto.replication)
      throw invalid_input(fmt::format("protocol {} declares no replication rule (prereg: 2 "
                                      "`replication: {{devices: N, rule: ...}}`)",
                                      proto.id));
    for (const auto &p : parts)
      if (p.doc.shard)
        throw integrity_error(fmt::format("a replication pools complete reports; this one is "
                                          "shard {} (merge its shards first)",
                                          to_string(*p.doc.shard)),
                              p.dir.string());
    if (static_cast<std::int64_t>(parts.size()) != proto.replication->devices)
      throw integrity_error(fmt::format("the protocol's replication pools {} devices' reports; "
                                        "{} given",
                                        proto.replication->devices, parts.size()));
    std::sort(parts.begin(), parts.end(),
              [](const part &a, const part &b) { return a.doc.run.run_id < b.doc.run.run_id; });
    return;
  }
  const std::string device = device_of(parts.front());
  for (const auto &p : parts) {
    if (!p.doc.shard)
      throw integrity_error("this report is not a shard (`prereg run --shard K/N` writes them)",
                            p.dir.string());
    if (device_of(p) != device)
      throw integrity_error(fmt::format("the shards ran on different device models ({} and {}); "
                                        "a merge keeps one model (replication pools several)",
                                        device, device_of(p)),
                            p.dir.string());
  }
  const std::int64_t n = parts.front().doc.shard->count;
  std::vector<const part *> by_index(static_cast<std::size_t>(n) + 1, nullptr);
  for (const auto &p : parts) {
    if (p.doc.shard->count != n)
      throw integrity_error(fmt::format("the parts split the plan differently: shard {} and "
                                        "shard {}",
                                        to_string(*parts.front().doc.shard),
                                        to_string(*p.doc.shard)),
                            p.dir.string());
    const auto k = static_cast<std::size_t>(p.doc.shard->index);
    if (by_index[k] != nullptr)
      throw integrity_error(fmt::format("shard {} is given twice ({} and {})",
                                        to_string(*p.doc.shard), by_index[k]->doc.run.run_id,
                                        p.doc.run.run_id),
                            p.dir.string());
    by_index[k] = &p;
  }
  std::vector<std::string> missing_shards;
  std::vector<std::string> missing_cells;
  for (std::int64_t k = 1; k <= n; ++k) {
    if (by_index[static_cast<std::size_t>(k)] != nullptr)
      continue;
    missing_shards.push_back(to_string(shard_spec{k, n}));
    for (const auto &c : shard_cells(proto, {k, n}))
      missing_cells.push_back(cell_label(c));
  }
  if (!missing_shards.empty())
    throw integrity_error(fmt::format("incomplete cover: shard(s) {} missing, so {} cell(s) are "
                                      "missing: {}; rerun with `prereg run {} --shard K/N`",
                                      list_some(missing_shards), missing_cells.size(),
                                      list_some(missing_cells, 12), hash.substr(0, 12)));
  // Disjoint: every cell of the union is in one part only (each part's audit tied its cells
  // to its shard; this guards the rule itself).
  std::vector<cell_key> seen;
  for (const auto &p : parts)
    for (const auto &c : p.doc.cells) {
      if (std::find(seen.begin(), seen.end(), c.key) != seen.end())
        throw integrity_error(fmt::format("cell {} is in two parts", cell_label(c.key)),
                              p.dir.string());
      seen.push_back(c.key);
    }
  std::sort(parts.begin(), parts.end(),
            [](const part &a, const part &b) { return a.doc.shard->index < b.doc.shard->index; });
}

json part_summary(const part &p, const protocol &proto) {
  json s = {{"path", (fs::path("parts") / proto.id / p.doc.run.run_id).string()},
            {"run_id", p.doc.run.run_id},
            {"report_sha256", sha256_hex(p.bytes)},
            {"attempt", p.doc.attempt},
            {"device_name", device_of(p)},
            {"device_ordinal", p.doc.run.device_ordinal},
            {"ceiling_gbps", finite_or_null(p.doc.instrument.ceiling_gbps)},
            {"launch_floor_ms", finite_or_null(p.doc.instrument.launch_floor_ms)},
            {"cells", p.doc.cells.size()}};
  if (p.doc.shard)
    s["shard"] = to_json(*p.doc.shard);
  json verdicts = json::array();
  for (const auto &r : p.doc.predictions)
    verdicts.push_back({{"id", r.id}, {"verdict", std::string(to_string(r.verdict))}});
  s["verdicts"] = std::move(verdicts);
  return s;
}

std::size_t plan_index(const std::vector<cell_key> &plan, const cell_key &k) {
  return static_cast<std::size_t>(std::find(plan.begin(), plan.end(), k) - plan.begin());
}

/// The merged report.json object: a pure function of the (ordered) parts and `meta`
/// ({merge_id, merged_at}) and `tool`.
json build_merged(const std::vector<part> &parts, merge_kind kind, const protocol &proto,
                  const json &meta, const json &tool) {
  const report_document &first = parts.front().doc;
  json out = {{"merge_version", merge_format_version},
              {"kind", kind_name(kind)},
              {"tool", tool},
              {"protocol",
               {{"hash", first.protocol.hash},
                {"body", first.protocol.body},
                {"freeze", first.protocol.freeze}}},
              {"merge", meta}};
  json summaries = json::array();
  for (const auto &p : parts)
    summaries.push_back(part_summary(p, proto));
  out["parts"] = std::move(summaries);

  if (kind == merge_kind::replication) {
    const replication_spec &rule = *proto.replication;
    out["replication"] = {
        {"devices", rule.devices}, {"rule", rule.rule}, {"threshold", rule.threshold}};
    json pooled = json::array();
    for (std::size_t i = 0; i < proto.predictions.size(); ++i) {
      const auto &spec = proto.predictions[i];
      std::int64_t confirmed = 0, refuted = 0, inconclusive = 0;
      for (const auto &p : parts) {
        const auto it = std::find_if(p.doc.predictions.begin(), p.doc.predictions.end(),
                                     [&](const prediction_result &r) { return r.id == spec.id; });
        const verdict_kind v =
            it == p.doc.predictions.end() ? verdict_kind::inconclusive : it->verdict;
        (v == verdict_kind::confirmed ? confirmed
         : v == verdict_kind::refuted ? refuted
                                      : inconclusive)++;
      }
      const std::string verdict = pooled_verdict(confirmed, refuted, rule.devices, rule.threshold);
      pooled.push_back(
          {{"id", spec.id},
           {"claim", spec.claim},
           {"expect", spec.expect},
           {"confirmed", confirmed},
           {"refuted", refuted},
           {"inconclusive", inconclusive},
           {"verdict", verdict},
           {"reason", fmt::format("{} of {} devices confirmed, {} refuted, {} inconclusive; rule "
                                  "'{}' needs {} confirmation(s)",
                                  confirmed, rule.devices, refuted, inconclusive, rule.rule,
                                  rule.threshold)}});
    }
    out["predictions"] = std::move(pooled);
    return out;
  }

  // Shards: the union of the parts' records, copied through as JSON, in plan order.
  const std::vector<cell_key> plan = all_cells(proto);
  std::vector<std::pair<std::size_t, json>> cells, correctness;
  json defects = json::array(), deviations = json::array();
  report_document joined;
  joined.schema_version = first.schema_version;
  joined.environment = first.environment;
  joined.instrument = first.instrument; // shard 1's instrument: pct_ceiling reads its ceiling
  for (const auto &p : parts) {
    for (std::size_t i = 0; i < p.doc.cells.size(); ++i) {
      cells.emplace_back(plan_index(plan, p.doc.cells[i].key), p.raw.at("cells").at(i));
      joined.cells.push_back(p.doc.cells[i]);
    }
    for (std::size_t i = 0; i < p.doc.correctness.size(); ++i) {
      correctness.emplace_back(plan_index(plan, p.doc.correctness[i].key),
                               p.raw.at("correctness").at(i));
      joined.correctness.push_back(p.doc.correctness[i]);
    }
    for (const auto &d : p.raw.at("defects"))
      defects.push_back(d);
    for (const auto &d : p.raw.at("deviations"))
      deviations.push_back(d);
  }
  const auto by_plan = [&](const auto &a, const auto &b) { return a.first < b.first; };
  std::stable_sort(cells.begin(), cells.end(), by_plan);
  std::stable_sort(correctness.begin(), correctness.end(), by_plan);
  std::stable_sort(joined.cells.begin(), joined.cells.end(),
                   [&](const report_cell &a, const report_cell &b) {
                     return plan_index(plan, a.key) < plan_index(plan, b.key);
                   });
  std::stable_sort(joined.correctness.begin(), joined.correctness.end(),
                   [&](const report_correctness &a, const report_correctness &b) {
                     return plan_index(plan, a.key) < plan_index(plan, b.key);
                   });
  json cells_json = json::array(), correctness_json = json::array();
  for (auto &[i, c] : cells)
    cells_json.push_back(std::move(c));
  for (auto &[i, c] : correctness)
    correctness_json.push_back(std::move(c));
  out["schema_version"] = first.schema_version;
  out["environment"] = parts.front().raw.at("environment");
  out["instrument"] = parts.front().raw.at("instrument");
  out["cells"] = std::move(cells_json);
  out["correctness"] = std::move(correctness_json);
  out["defects"] = std::move(defects);
  out["deviations"] = std::move(deviations);
  json predictions = json::array();
  for (const auto &r : judge_predictions(proto, first.protocol.hash, report_to_raw(joined)))
    predictions.push_back(to_json(r));
  out["predictions"] = std::move(predictions);
  return out;
}

json current_tool() {
  return {{"name", "prereg"},
          {"version", build_info::version},
          {"git_commit", build_info::git_commit},
          {"build_flags", build_info::build_flags}};
}

/// Copies the regular files of `from` (a part's folder) into `to`.
void copy_part(const fs::path &from, const fs::path &to) {
  fs::create_directories(to);
  for (const auto &e : fs::directory_iterator(from))
    if (e.is_regular_file())
      write_file_atomic(to / e.path().filename(), read_file(e.path()));
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string md_cell(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string number(const json &v, const char *format) {
  if (!v.is_number())
    return "-";
  return fmt::format(fmt::runtime(format), v.get<double>());
}

/// The tables of a merged report: a title, then (header, rows) per table.
struct table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

std::vector<table> merged_tables(const json &m) {
  std::vector<table> out;
  const bool replication = m.value("kind", "") == "replication";
  table parts{replication ? "Per device" : "Shards", {}, {}};
  parts.header = replication ? std::vector<std::string>{"device", "ordinal", "run", "ceiling GB/s",
                                                        "launch floor ms"}
                             : std::vector<std::string>{"shard", "device",       "run",
                                                        "cells", "ceiling GB/s", "launch floor ms"};
  const json &predictions = m.at("predictions");
  if (replication)
    for (const auto &p : predictions)
      parts.header.push_back(p.value("id", ""));
  for (const auto &p : m.at("parts")) {
    std::vector<std::string> row;
    if (replication) {
      row = {p.value("device_name", ""), std::to_string(p.value("device_ordinal", 0)),
             p.value("run_id", ""), number(p.at("ceiling_gbps"), "{:.1f}"),
             number(p.at("launch_floor_ms"), "{:.4g}")};
      for (const auto &pr : predictions) {
        std::string v = "-";
        for (const auto &pv : p.at("verdicts"))
          if (pv.value("id", "") == pr.value("id", ""))
            v = pv.value("verdict", "");
        row.push_back(v);
      }
    } else {
      const json &s = p.at("shard");
      row = {fmt::format("{}/{}", s.value("index", 0), s.value("count", 0)),
             p.value("device_name", ""),
             p.value("run_id", ""),
             std::to_string(p.value("cells", 0)),
             number(p.at("ceiling_gbps"), "{:.1f}"),
             number(p.at("launch_floor_ms"), "{:.4g}")};
    }
    parts.rows.push_back(std::move(row));
  }
  out.push_back(std::move(parts));
  table verdicts{replication ? "Pooled verdicts" : "Verdicts over the union of the shards",
                 {"id", "verdict", "claim", "expect", "reason"},
                 {}};
  for (const auto &p : predictions)
    verdicts.rows.push_back({p.value("id", ""), p.value("verdict", ""), p.value("claim", ""),
                             p.value("expect", ""), p.value("reason", "")});
  out.push_back(std::move(verdicts));
  if (!replication) {
    table cells{"Cells", {"arm", "pass", "rows", "cols", "n", "median ms", "GB/s"}, {}};
    for (const auto &c : m.at("cells"))
      cells.rows.push_back({c.value("arm", ""), c.value("pass", ""),
                            std::to_string(c.value("rows", 0)), std::to_string(c.value("cols", 0)),
                            std::to_string(c.value("n", 0)), number(c.at("median_ms"), "{:.4f}"),
                            number(c.at("gbps"), "{:.1f}")});
    out.push_back(std::move(cells));
  }
  return out;
}

std::string merged_title(const json &m) {
  const json &body = m.at("protocol").at("body");
  return fmt::format("{} ({}): {} report {}", body.value("id", ""),
                     m.at("protocol").value("hash", "").substr(0, 12),
                     m.value("kind", "") == "replication" ? "replication" : "merged shards",
                     m.at("merge").value("merge_id", ""));
}

// ---- the audit ------------------------------------------------------------------------------

struct merged_view {
  fs::path dir;
  std::string bytes;
  json report;
};

[[noreturn]] void fail(const std::string &why) { throw std::runtime_error(why); }

std::vector<part> kept_parts(const merged_view &v) {
  std::vector<part> parts;
  for (const auto &p : v.report.at("parts")) {
    const fs::path rel = p.at("path").get<std::string>();
    if (rel.is_absolute() || rel.lexically_normal().string().starts_with(".."))
      fail(fmt::format("parts[].path {} leaves the report folder", rel.string()));
    parts.push_back(read_part(v.dir / rel));
  }
  return parts;
}

} // namespace

std::string pooled_verdict(std::int64_t confirmed, std::int64_t refuted, std::int64_t devices,
                           std::int64_t threshold) {
  if (confirmed >= threshold)
    return "confirmed";
  if (refuted > devices - threshold)
    return "refuted";
  return "inconclusive";
}

bool is_merged_report(const fs::path &dir) {
  std::error_code ec;
  const fs::path file = dir / "report.json";
  if (!fs::is_regular_file(file, ec))
    return false;
  try {
    const json j = parse_json_strict(read_file(file), file.string());
    return j.is_object() && j.contains("merge_version");
  } catch (const std::exception &) {
    return false; // the ordinary audit says what is wrong with it
  }
}

fs::path merge_reports(const store &s, const merge_options &o, const trust_root &trust,
                       const signing_key &key) {
  std::vector<part> parts;
  for (const auto &dir : o.parts) {
    if (is_merged_report(dir))
      throw invalid_input("a merged report cannot be a part of another merge", dir.string());
    const audit_result a = audit_report(dir, s, trust);
    if (!a.passed())
      throw integrity_error(
          fmt::format("part does not audit clean: {} failed", list_some(a.failed())), dir.string());
    parts.push_back(read_part(dir));
  }
  if (parts.empty())
    throw invalid_input("merge: give at least one report folder");
  const frozen_protocol fp = s.load(parts.front().doc.protocol.hash);
  check_rules(parts, o.kind, fp.proto);

  std::random_device rd;
  const std::string prefix = o.kind == merge_kind::shards ? "MERGE" : "REPLICATION";
  const fs::path folder = o.out_dir / fp.proto.id;
  std::string merge_id;
  fs::path temp;
  for (int tries = 0;; ++tries) {
    if (tries == 1000)
      throw io_error("cannot reserve a merge id", folder.string());
    merge_id = fmt::format("{}-{}-{}-{:06x}", prefix, utc_stamp(std::time(nullptr)),
                           fp.hash.substr(0, 12), rd() & 0xffffffu);
    temp = folder / ("." + merge_id + ".partial");
    if (fs::exists(folder / merge_id) || !create_directory_exclusive(temp))
      continue;
    break;
  }
  const fs::path final_dir = folder / merge_id;
  try {
    json run_ids = json::array();
    for (const auto &p : parts)
      run_ids.push_back(p.doc.run.run_id);
    const json meta = {{"merge_id", merge_id}, {"merged_at", utc_now_rfc3339()}};
    const json merged = build_merged(parts, o.kind, fp.proto, meta, current_tool());
    const std::string payload = canonical_json(merged);
    for (const auto &p : parts)
      copy_part(p.dir, temp / "parts" / fp.proto.id / p.doc.run.run_id);
    write_file_atomic(temp / "report.json", payload);
    const std::string sig = key.sign(dsse_pae(merge_payload_type, payload));
    write_file_atomic(
        temp / "report.dsse.json",
        canonical_json({{"payloadType", merge_payload_type},
                        {"payload", base64_encode(payload)},
                        {"signatures", json::array({{{"keyid", key.fingerprint()},
                                                     {"sig", base64_encode(sig)}}})}}));
    write_file_atomic(temp / "report.md", render_merged_markdown(merged));
    write_file_atomic(temp / "report.html", render_merged_html(merged));
    s.add_key(key.public_part());
    file_lock lock(s.lock_path());
    s.get_ledger().verify_for_append(&key);
    rename_no_replace(temp, final_dir); // never over another report
    try {
      s.get_ledger().append({{"event", ledger_event::merge},
                             {"protocol_hash", fp.hash},
                             {"merge_id", merge_id},
                             {"kind", kind_name(o.kind)},
                             {"parts", run_ids},
                             {"report_sha256", sha256_hex(payload)}},
                            key);
    } catch (...) {
      std::error_code ec;
      fs::remove_all(final_dir, ec); // ours, just renamed, not yet in the ledger
      throw;
    }
  } catch (...) {
    std::error_code ec;
    fs::remove_all(temp, ec);
    throw;
  }
  return final_dir;
}

std::string render_merged_markdown(const json &m) {
  std::string out = fmt::format("# {}\n\n", md_cell(merged_title(m)));
  const json &body = m.at("protocol").at("body");
  out += fmt::format("Protocol `{}`, merged at {} from {} signed part(s), each audited and kept "
                     "under `parts/`.\n",
                     m.at("protocol").value("hash", ""), m.at("merge").value("merged_at", ""),
                     m.at("parts").size());
  if (const auto r = m.find("replication"); r != m.end())
    out += fmt::format("\nReplication rule (frozen): `{}` of {} devices ({} confirmation(s) "
                       "needed).\n",
                       r->value("rule", ""), r->value("devices", 0), r->value("threshold", 0));
  out += fmt::format("\nHypothesis: {}\n", md_cell(body.value("hypothesis", "")));
  for (const auto &t : merged_tables(m)) {
    out += fmt::format("\n## {}\n\n|", t.title);
    for (const auto &h : t.header)
      out += fmt::format(" {} |", md_cell(h));
    out += "\n|";
    for (std::size_t i = 0; i < t.header.size(); ++i)
      out += " --- |";
    out += "\n";
    for (const auto &row : t.rows) {
      out += "|";
      for (const auto &c : row)
        out += fmt::format(" {} |", md_cell(c));
      out += "\n";
    }
  }
  return out;
}

std::string render_merged_html(const json &m) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
                    html_escape(merged_title(m)) +
                    "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
                    "collapse}td,th{border:1px solid #999;padding:2px 6px}</style></head><body>\n";
  out += "<h1>" + html_escape(merged_title(m)) + "</h1>\n";
  out += "<p>Protocol <code>" + html_escape(m.at("protocol").value("hash", "")) +
         "</code>, merged at " + html_escape(m.at("merge").value("merged_at", "")) + " from " +
         std::to_string(m.at("parts").size()) +
         " signed part(s), each audited and kept under <code>parts/</code>.</p>\n";
  if (const auto r = m.find("replication"); r != m.end())
    out += "<p>Replication rule (frozen): <code>" + html_escape(r->value("rule", "")) +
           "</code> of " + std::to_string(r->value("devices", 0)) + " devices (" +
           std::to_string(r->value("threshold", 0)) + " confirmation(s) needed).</p>\n";
  for (const auto &t : merged_tables(m)) {
    out += fmt::format("<h2>{}</h2>\n<table><tr>", html_escape(t.title));
    for (const auto &h : t.header)
      out += fmt::format("<th>{}</th>", html_escape(h));
    out += "</tr>\n";
    for (const auto &row : t.rows) {
      out += "<tr>";
      for (const auto &c : row)
        out += fmt::format("<td>{}</td>", html_escape(c));
      out += "</tr>\n";
    }
    out += "</table>\n";
  }
  return out + "</body></html>\n";
}

audit_result audit_merged_report(const fs::path &dir, const store &s, const trust_root &trust,
                                 const std::vector<fs::path> &checkpoints) {
  audit_result result;
  result.report_dir = dir;
  merged_view v;
  v.dir = dir;
  std::vector<std::string> signers;
  std::vector<part> parts;
  std::optional<protocol> proto;
  const auto run = [&](const char *name, const std::function<std::string()> &check) {
    audit_check c{name, false, {}};
    try {
      c.detail = check();
      c.passed = true;
    } catch (const std::exception &e) {
      c.detail = escape_control(e.what());
    }
    result.checks.push_back(std::move(c));
  };
  run("envelope", [&] {
    v.bytes = read_file(dir / "report.json");
    v.report = parse_json_strict(v.bytes, (dir / "report.json").string());
    const json env =
        parse_json_strict(read_file(dir / "report.dsse.json"), (dir / "report.dsse.json").string());
    if (env.value("payloadType", "") != merge_payload_type)
      fail(fmt::format("payloadType is not {}", merge_payload_type));
    const std::string payload = base64_decode(env.value("payload", ""));
    if (payload != v.bytes)
      fail("report.json is not the signed payload");
    if (canonical_json(v.report) != v.bytes)
      fail("report.json is not in RFC 8785 canonical form");
    const json &sigs = env.at("signatures");
    if (!sigs.is_array() || sigs.empty())
      fail("the envelope holds no signature");
    for (const auto &sig : sigs) {
      const std::string keyid = sig.value("keyid", "");
      const auto k = trust.find(s, keyid);
      if (!k)
        fail(fmt::format("signature by an unknown or unpinned key {}", keyid));
      if (!k->verify(dsse_pae(merge_payload_type, payload), base64_decode(sig.value("sig", ""))))
        fail(fmt::format("the signature by {} does not verify", keyid.substr(0, 12)));
      signers.push_back(keyid);
    }
    return fmt::format("{} signature(s) verify over the DSSE PAE of report.json ({})",
                       signers.size(), merge_payload_type);
  });
  run("protocol", [&] {
    const std::string hash = v.report.at("protocol").at("hash").get<std::string>();
    const json &body = v.report.at("protocol").at("body");
    if (protocol_hash(body) != hash)
      fail("protocol.body does not hash to protocol.hash");
    const frozen_protocol fp = s.load(hash);
    if (fp.canonical != canonical_json(body))
      fail("protocol.body differs from the frozen copy");
    if (canonical_json(fp.freeze) != canonical_json(v.report.at("protocol").at("freeze")))
      fail("protocol.freeze differs from the store's freeze record");
    proto = fp.proto;
    return fmt::format("body hashes to {}, equals the frozen copy; freeze record equals the "
                       "store's",
                       hash.substr(0, 12));
  });
  run("parts", [&] {
    parts = kept_parts(v);
    std::vector<std::string> summary;
    for (const auto &p : parts) {
      const audit_result a = audit_report(p.dir, s, trust, checkpoints);
      if (!a.passed())
        fail(fmt::format("part {} fails its audit: {}", p.doc.run.run_id, list_some(a.failed())));
      summary.push_back(p.doc.run.run_id);
    }
    return fmt::format("{} part(s) kept under parts/ each pass every audit check: {}", parts.size(),
                       list_some(summary, 4));
  });
  run("merge", [&] {
    if (!proto)
      fail("the protocol check failed");
    if (parts.empty())
      fail("the parts check failed");
    const std::string kind = v.report.value("kind", "");
    if (kind != "shards" && kind != "replication")
      fail("kind is neither shards nor replication");
    const merge_kind k = kind == "shards" ? merge_kind::shards : merge_kind::replication;
    check_rules(parts, k, *proto);
    const json rebuilt = build_merged(parts, k, *proto, v.report.at("merge"), v.report.at("tool"));
    if (canonical_json(rebuilt) != v.bytes) {
      std::vector<std::string> differ;
      for (const auto &[key, val] : rebuilt.items())
        if (!v.report.contains(key) || canonical_json(v.report.at(key)) != canonical_json(val))
          differ.push_back(key);
      for (const auto &[key, val] : v.report.items())
        if (!rebuilt.contains(key))
          differ.push_back(key);
      fail("the report differs from the merge rebuilt from its parts in: " + list_some(differ));
    }
    return fmt::format("the {} merge rebuilt from its {} part(s) equals report.json byte for byte "
                       "(verdicts recomputed)",
                       kind, parts.size());
  });
  run("pages", [&] {
    if (read_file(dir / "report.md") != render_merged_markdown(v.report))
      fail("report.md differs from the page rendered from report.json");
    if (read_file(dir / "report.html") != render_merged_html(v.report))
      fail("report.html differs from the page rendered from report.json");
    return std::string("report.md and report.html equal the pages rendered from report.json");
  });
  run("ledger", [&] {
    const std::string hash = v.report.at("protocol").at("hash").get<std::string>();
    const std::string merge_id = v.report.at("merge").at("merge_id").get<std::string>();
    const ledger l = s.get_ledger();
    const key_lookup keys = [&](const std::string &fp) { return trust.find(s, fp); };
    const std::size_t n = l.verify(keys);
    const json *found = nullptr;
    std::size_t count = 0;
    for (const auto &e : l.entries())
      if (e.value("event", "") == ledger_event::merge && e.value("merge_id", "") == merge_id &&
          e.value("protocol_hash", "") == hash) {
        found = &e;
        ++count;
      }
    if (count != 1)
      fail(fmt::format("the ledger holds {} merge entries for {}", count, merge_id));
    if (found->value("report_sha256", "") != sha256_hex(v.bytes))
      fail("the merge entry records another report_sha256");
    json run_ids = json::array();
    for (const auto &p : v.report.at("parts"))
      run_ids.push_back(p.at("run_id"));
    if (canonical_json(found->at("parts")) != canonical_json(run_ids))
      fail("the merge entry names other parts");
    const fs::path folder = fs::absolute(dir).lexically_normal();
    const fs::path named = folder.has_filename() ? folder : folder.parent_path();
    if (named.filename().string() != merge_id)
      fail(fmt::format("the report folder is not named {}", merge_id));
    return fmt::format("ledger verifies ({} entries); merge {} recorded at seq {} with this "
                       "report's sha256",
                       n, merge_id, found->value("seq", 0));
  });
  result.trust = trust.describe(s, signers);
  result.history = fmt::format("merged report of {} part(s)", parts.size());
  return result;
}

} // namespace prereg
