// The merged report.json: a pure function of its (ordered) parts. Shards: the union of their
// records in plan order, verdicts judged over it; replication: the pooled verdicts.
#include "run/merge/build.hpp"

#include "report/report.hpp"
#include "spec/shard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace prereg::merge_detail {
namespace fs = std::filesystem;
namespace {

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

// One prediction's verdicts over the devices, pooled by the replication rule.
json pooled_prediction(const std::vector<part> &parts, const prediction_spec &spec,
                       const replication_spec &rule) {
  std::int64_t confirmed = 0, refuted = 0, inconclusive = 0;
  for (const auto &p : parts) {
    const auto it = std::find_if(p.doc.predictions.begin(), p.doc.predictions.end(),
                                 [&](const prediction_result &r) { return r.id == spec.id; });
    const verdict_kind v = it == p.doc.predictions.end() ? verdict_kind::inconclusive : it->verdict;
    (v == verdict_kind::confirmed ? confirmed
     : v == verdict_kind::refuted ? refuted
                                  : inconclusive)++;
  }
  const std::string verdict = pooled_verdict(confirmed, refuted, rule.devices, rule.threshold);
  return {{"id", spec.id},
          {"claim", spec.claim},
          {"expect", spec.expect},
          {"confirmed", confirmed},
          {"refuted", refuted},
          {"inconclusive", inconclusive},
          {"verdict", verdict},
          {"reason",
           fmt::format("{} of {} devices confirmed, {} refuted, {} inconclusive; rule "
                       "'{}' needs {} confirmation(s)",
                       confirmed, rule.devices, refuted, inconclusive, rule.rule, rule.threshold)}};
}

void add_replication(json &out, const std::vector<part> &parts, const protocol &proto) {
  const replication_spec &rule = *proto.replication;
  out["replication"] = {
      {"devices", rule.devices}, {"rule", rule.rule}, {"threshold", rule.threshold}};
  json pooled = json::array();
  for (const auto &spec : proto.predictions)
    pooled.push_back(pooled_prediction(parts, spec, rule));
  out["predictions"] = std::move(pooled);
}

std::size_t plan_index(const std::vector<cell_key> &plan, const cell_key &k) {
  return static_cast<std::size_t>(std::find(plan.begin(), plan.end(), k) - plan.begin());
}

// The shards' records: as JSON (copied through) and as the model (to judge), in plan order.
struct shard_union {
  std::vector<std::pair<std::size_t, json>> cells, correctness;
  json defects = json::array(), deviations = json::array();
  report_document joined;
};

void collect(shard_union &u, const part &p, const std::vector<cell_key> &plan) {
  for (std::size_t i = 0; i < p.doc.cells.size(); ++i) {
    u.cells.emplace_back(plan_index(plan, p.doc.cells[i].key), p.raw.at("cells").at(i));
    u.joined.cells.push_back(p.doc.cells[i]);
  }
  for (std::size_t i = 0; i < p.doc.correctness.size(); ++i) {
    u.correctness.emplace_back(plan_index(plan, p.doc.correctness[i].key),
                               p.raw.at("correctness").at(i));
    u.joined.correctness.push_back(p.doc.correctness[i]);
  }
  for (const auto &d : p.raw.at("defects"))
    u.defects.push_back(d);
  for (const auto &d : p.raw.at("deviations"))
    u.deviations.push_back(d);
}

void sort_by_plan(shard_union &u, const std::vector<cell_key> &plan) {
  const auto by_plan = [&](const auto &a, const auto &b) { return a.first < b.first; };
  std::stable_sort(u.cells.begin(), u.cells.end(), by_plan);
  std::stable_sort(u.correctness.begin(), u.correctness.end(), by_plan);
  std::stable_sort(u.joined.cells.begin(), u.joined.cells.end(),
                   [&](const report_cell &a, const report_cell &b) {
                     return plan_index(plan, a.key) < plan_index(plan, b.key);
                   });
  std::stable_sort(u.joined.correctness.begin(), u.joined.correctness.end(),
                   [&](const report_correctness &a, const report_correctness &b) {
                     return plan_index(plan, a.key) < plan_index(plan, b.key);
                   });
}

json values_of(std::vector<std::pair<std::size_t, json>> &indexed) {
  json out = json::array();
  for (auto &[i, c] : indexed)
    out.push_back(std::move(c));
  return out;
}

// Shards: the union of the parts' records, copied through as JSON, in plan order.
void add_shard_union(json &out, const std::vector<part> &parts, const protocol &proto) {
  const report_document &first = parts.front().doc;
  const std::vector<cell_key> plan = all_cells(proto);
  shard_union u;
  // The highest of the parts' versions: each later version reads every earlier one's cells of the
  // same key form (5 and 7, 6 and 7), so the copied cells keep what a part's version gave them.
  u.joined.schema_version = first.schema_version;
  for (const auto &p : parts)
    u.joined.schema_version = std::max(u.joined.schema_version, p.doc.schema_version);
  u.joined.environment = first.environment;
  u.joined.instrument = first.instrument; // shard 1's instrument: pct_ceiling reads its ceiling
  for (const auto &p : parts)
    collect(u, p, plan);
  sort_by_plan(u, plan);
  out["schema_version"] = u.joined.schema_version;
  out["environment"] = parts.front().raw.at("environment");
  out["instrument"] = parts.front().raw.at("instrument");
  out["cells"] = values_of(u.cells);
  out["correctness"] = values_of(u.correctness);
  out["defects"] = std::move(u.defects);
  out["deviations"] = std::move(u.deviations);
  json predictions = json::array();
  // Judged by the first part's verdict rules, as the merge's audit re-judges them.
  for (const auto &r :
       judge_predictions(proto, first.protocol.hash, report_to_raw(u.joined), first.tool.analysis))
    predictions.push_back(to_json(r));
  out["predictions"] = std::move(predictions);
}

} // namespace

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
  if (kind == merge_kind::replication)
    add_replication(out, parts, proto);
  else
    add_shard_union(out, parts, proto);
  return out;
}

} // namespace prereg::merge_detail

namespace prereg {

std::string pooled_verdict(std::int64_t confirmed, std::int64_t refuted, std::int64_t devices,
                           std::int64_t threshold) {
  if (confirmed >= threshold)
    return "confirmed";
  if (refuted > devices - threshold)
    return "refuted";
  return "inconclusive";
}

} // namespace prereg
