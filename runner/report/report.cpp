// Assembles the report from a raw run (the one raw <-> report mapping), and signs it.
#include "report/report.hpp"

#include "analysis/cell_stats.hpp"
#include "analysis/defects.hpp"
#include "analysis/verdict.hpp"
#include "base/expr.hpp"
#include "prereg/build_info.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg {
namespace {

report_deviation report_deviation_of(const json &d) {
  report_deviation out;
  out.kind = d.value("kind", "");
  out.message = d.value("message", "");
  if (const auto c = d.find("cell"); c != d.end())
    out.cell = cell_key_from_json(*c, "deviation.cell", "");
  for (const auto &[k, v] : d.items())
    if (k != "kind" && k != "message" && k != "cell")
      out.extra[k] = v;
  return out;
}

/// A version-1 cell's raw value `field` from its defect `code`'s evidence, if there is one.
const json *evidence_of(const report_document &r, std::string_view code, const cell_key &key,
                        std::string_view field) {
  for (const auto &d : r.defects) {
    if (d.code != code || !d.cell || !(*d.cell == key) || !d.evidence.is_object())
      continue;
    if (const auto it = d.evidence.find(std::string(field)); it != d.evidence.end())
      return &*it;
  }
  return nullptr;
}

} // namespace

std::vector<prediction_result> judge_predictions(const protocol &proto, const std::string &hash,
                                                 const raw_run &raw, int analysis) {
  std::vector<std::string> arm_ids;
  for (const auto &a : proto.arms)
    arm_ids.push_back(a.id);
  std::vector<expectation> parsed;
  parsed.reserve(proto.predictions.size());
  for (const auto &p : proto.predictions)
    parsed.push_back(expectation::parse(p.expect, arm_ids, "prediction " + p.id));
  std::vector<prediction_check> checks;
  for (const auto &e : parsed)
    checks.push_back({[&e](const metric_lookup &value) { return e.holds(value); }, e.references()});
  return evaluate_predictions(proto, hash, checks, raw, analysis);
}

report_cell to_report_cell(const cell_record &cell, const cell_statistics &stats,
                           int schema_version) {
  report_cell c;
  c.key = cell.key;
  c.samples_ms = cell.samples_ms;
  c.n = stats.n;
  c.median_ms = stats.median_ms;
  c.q1_ms = stats.q1_ms;
  c.q3_ms = stats.q3_ms;
  c.iqr_ms = stats.iqr_ms;
  c.mean_ms = stats.mean_ms;
  c.min_ms = stats.min_ms;
  c.statistic_ms = stats.statistic_ms;
  c.spearman_rho = stats.spearman_rho;
  c.peak_bytes = stats.peak_bytes;
  c.bytes_per_step = stats.bytes_per_step;
  c.gbps = stats.gbps;
  c.pct_ceiling = stats.pct_ceiling;
  c.bound = stats.bound;
  c.flags = stats.flags;
  c.error = cell.error;
  if (schema_version >= 2) {
    c.clock_mhz = cell.clock_mhz;
    c.harness_bytes_in_window = cell.harness_bytes_in_window;
  }
  if (schema_version >= 3) {
    c.first_call_ms = cell.first_call_ms;
    c.warmup_calls = cell.warmup_calls;
    c.off_window_ms = cell.off_window_ms;
    c.regions_ms = cell.regions_ms;
    c.region_shares = stats.region_shares;
  }
  if (schema_version >= 4)
    c.region_kernels_ms = cell.region_kernels_ms;
  if (schema_version >= report_schema_version_state) {
    c.states = cell.states;
    c.stop = cell.stop;
  }
  if (schema_version >= report_schema_version_hardened)
    c.sched = cell.sched;
  if (schema_version >= report_schema_version_roofs)
    c.roofline = stats.roofline;
  if (schema_version >= 4 && stats.kernel) {
    const kernel_statistics &k = *stats.kernel;
    report_kernel_clock kc;
    kc.kernel_ms = cell.kernel_ms;
    kc.gap_ms = k.gap_ms;
    kc.kernels = cell.kernel_counts;
    // Present only when some sample ran a graph node, so that reports without graphs keep
    // the shape of those written before the count existed.
    if (std::any_of(cell.graph_kernel_counts.begin(), cell.graph_kernel_counts.end(),
                    [](std::int64_t v) { return v > 0; }))
      kc.graph_kernels = cell.graph_kernel_counts;
    kc.median_kernel_ms = k.median_kernel_ms;
    kc.q1_kernel_ms = k.q1_kernel_ms;
    kc.q3_kernel_ms = k.q3_kernel_ms;
    kc.statistic_kernel_ms = k.statistic_kernel_ms;
    kc.median_gap_ms = k.median_gap_ms;
    kc.gap_share_pct = k.gap_share_pct;
    kc.median_kernels = k.median_kernels;
    for (std::size_t i = 0; i < cell.kernel_names.size(); ++i) {
      const kernel_name_record &n = cell.kernel_names[i];
      kc.names.push_back({n.name, n.calls, n.samples_ms, k.name_median_ms[i], k.name_share_pct[i]});
    }
    c.kernel_clock = std::move(kc);
  }
  return c;
}

raw_run report_to_raw(const report_document &r) {
  raw_run raw;
  raw.environment = r.environment;
  raw.instrument = r.instrument;
  raw.correctness = r.correctness;
  for (const auto &c : r.cells) {
    cell_record rec;
    rec.key = c.key;
    rec.samples_ms = c.samples_ms;
    rec.peak_bytes = c.peak_bytes;
    rec.error = c.error;
    // Version 1 cells do not carry these two; the defects that raised them hold them as
    // evidence. Without one the value is unknown and its flag cannot be recomputed, so a flag
    // or a defect without the other fails the audit's statistics check.
    if (c.clock_mhz)
      rec.clock_mhz = *c.clock_mhz;
    else if (const json *e = evidence_of(r, "clock-throttle", c.key, "clock_mhz");
             e != nullptr && e->is_number())
      rec.clock_mhz = e->get<double>();
    if (c.harness_bytes_in_window)
      rec.harness_bytes_in_window = *c.harness_bytes_in_window;
    else if (const json *e = evidence_of(r, "harness-allocation", c.key, "harness_bytes_in_window");
             e != nullptr && e->is_number_unsigned())
      rec.harness_bytes_in_window = e->get<std::uint64_t>();
    if (c.first_call_ms)
      rec.first_call_ms = *c.first_call_ms;
    if (c.warmup_calls)
      rec.warmup_calls = *c.warmup_calls;
    if (c.off_window_ms)
      rec.off_window_ms = *c.off_window_ms;
    // A cell's changed input is raw only in its input-mutated defect's evidence.
    if (const json *e = evidence_of(r, "input-mutated", c.key, "detail");
        e != nullptr && e->is_string())
      rec.input_mutated = e->get<std::string>();
    if (c.kernel_clock) {
      rec.kernel_ms = c.kernel_clock->kernel_ms;
      rec.kernel_counts = c.kernel_clock->kernels;
      rec.graph_kernel_counts = c.kernel_clock->graph_kernels;
      for (const auto &n : c.kernel_clock->names)
        rec.kernel_names.push_back({n.name, n.calls, n.samples_ms});
    }
    rec.regions_ms = c.regions_ms;
    rec.region_kernels_ms = c.region_kernels_ms;
    rec.states = c.states;
    rec.stop = c.stop;
    rec.sched = c.sched;
    raw.cells.push_back(std::move(rec));
  }
  return raw;
}

report_document build_report_document(const frozen_protocol &fp, const raw_run &raw,
                                      const run_meta &meta) {
  const protocol &proto = fp.proto;
  const auto stats = compute_cell_statistics(proto, raw);
  report_document r;
  // Over named axes the cell keys name their shape: the named-axes version (docs/report.md).
  r.schema_version = proto.axes.empty() ? report_schema_version : report_schema_version_named;
  // The device's state per sample or a stopping rule: the version that carries them.
  if (proto.measurement.stop || std::any_of(raw.cells.begin(), raw.cells.end(),
                                            [](const cell_record &c) { return !c.states.empty(); }))
    r.schema_version = report_schema_version_state;
  // The roofs beside the copy ceiling: the version that carries them (docs/report.md).
  if (raw.instrument.roofs)
    r.schema_version = report_schema_version_roofs;
  // A copy ceiling reused from an earlier measurement: the version that records its entry.
  if (raw.instrument.ceiling_reused)
    r.schema_version = report_schema_version_ceiling;
  // The sandbox's probes and the level they give (run.isolation): the version that carries them.
  if (meta.isolation && !meta.isolation->level.empty())
    r.schema_version = report_schema_version_probes;
  // The watchdog's record or the scheduling per sample: version 8 (docs/report.md).
  if (meta.watchdog || meta.scratch ||
      std::any_of(raw.cells.begin(), raw.cells.end(),
                  [](const cell_record &c) { return !c.sched.empty(); }))
    r.schema_version = report_schema_version_hardened;
  r.tool = {"prereg",
            build_info::version,
            build_info::git_commit,
            build_info::build_flags,
            report_renderer_version,
            report_analysis_version};
  r.protocol = {fp.hash, fp.body, fp.freeze};
  r.run = {meta.run_id,    meta.started_at, meta.finished_at, meta.device_ordinal, meta.ledger_head,
           meta.isolation, meta.arm_log,    meta.watchdog,    meta.scratch};
  r.environment = raw.environment;
  r.instrument = raw.instrument;
  for (std::size_t i = 0; i < raw.cells.size(); ++i)
    r.cells.push_back(to_report_cell(raw.cells[i], stats[i], r.schema_version));
  r.correctness = raw.correctness;
  r.predictions = judge_predictions(proto, fp.hash, raw, r.tool.analysis);
  r.defects = detect_defects(proto, raw, stats);
  for (const auto &d : raw.deviations)
    r.deviations.push_back(report_deviation_of(d));
  for (const auto &d : meta.deviations)
    r.deviations.push_back(report_deviation_of(d));
  r.attempt = meta.attempt;
  r.shard = meta.shard;
  return r;
}

json build_report(const frozen_protocol &fp, const raw_run &raw, const run_meta &meta) {
  return to_json(build_report_document(fp, raw, meta));
}

std::string make_envelope(const std::string &payload, const signing_key &key) {
  const std::string sig = key.sign(dsse_pae(dsse_payload_type, payload));
  const json env = {
      {"payloadType", dsse_payload_type},
      {"payload", base64_encode(payload)},
      {"signatures", json::array({{{"keyid", key.fingerprint()}, {"sig", base64_encode(sig)}}})}};
  return canonical_json(env);
}

} // namespace prereg
