// The report model's serialiser: each struct to its JSON members (canonical_json of a
// report_document's JSON is the signed payload).
#include "model/report_model.hpp"

#include "spec/device_state.hpp"
#include "spec/roofs.hpp"
#include "spec/sched.hpp"

#include <algorithm>

namespace prereg {

namespace {

json key_members(json j, const cell_key &k) {
  j["arm"] = k.arm;
  j["pass"] = std::string(to_string(k.pass));
  const json shape = shape_json(k); // named: the lifetime of the items() range below
  for (const auto &[name, value] : shape.items())
    j[name] = value;
  return j;
}

json run_json(const report_run &run) {
  json j = {{"run_id", run.run_id},
            {"started_at", run.started_at},
            {"finished_at", run.finished_at},
            {"device_ordinal", run.device_ordinal}};
  if (run.ledger_head)
    j["ledger_head"] = {{"seq", run.ledger_head->seq}, {"sha256", run.ledger_head->sha256}};
  if (run.isolation) {
    const report_isolation &i = *run.isolation;
    j["isolation"] = {{"layers", i.layers}, {"reason", i.reason}};
    if (!i.level.empty()) { // schema_version 8: the probes and the level they give
      json probes = json::array();
      for (const auto &p : i.probes)
        probes.push_back(
            {{"name", p.name}, {"outcome", p.outcome}, {"error", p.error}, {"detail", p.detail}});
      j["isolation"]["probes"] = probes;
      j["isolation"]["level"] = i.level;
    }
  }
  if (run.arm_log)
    j["arm_log"] = {{"file", run.arm_log->file}, {"sha256", run.arm_log->sha256}};
  if (run.watchdog) { // version 8
    json stuck = json::array();
    for (const auto &s : run.watchdog->stuck)
      stuck.push_back(
          {{"arm", s.arm}, {"cell", s.cell}, {"phase", s.phase}, {"waited_s", s.waited_s}});
    j["watchdog"] = {{"call_timeout_s", run.watchdog->call_timeout_s}, {"stuck", stuck}};
  }
  if (run.scratch) // version 8
    j["scratch"] = {{"bytes", run.scratch->bytes},
                    {"folders", run.scratch->folders},
                    {"reason", run.scratch->reason}};
  return j;
}

json kernel_clock_json(const report_kernel_clock &k) {
  json names = json::array();
  for (const auto &n : k.names)
    names.push_back({{"name", n.name},
                     {"calls", n.calls},
                     {"samples_ms", n.samples_ms},
                     {"median_ms", finite_or_null(n.median_ms)},
                     {"share_pct", finite_or_null(n.share_pct)}});
  json j = {{"kernel_ms", k.kernel_ms},
            {"gap_ms", k.gap_ms},
            {"kernels", k.kernels},
            {"median_kernel_ms", finite_or_null(k.median_kernel_ms)},
            {"q1_kernel_ms", finite_or_null(k.q1_kernel_ms)},
            {"q3_kernel_ms", finite_or_null(k.q3_kernel_ms)},
            {"statistic_kernel_ms", finite_or_null(k.statistic_kernel_ms)},
            {"median_gap_ms", finite_or_null(k.median_gap_ms)},
            {"gap_share_pct", finite_or_null(k.gap_share_pct)},
            {"median_kernels", finite_or_null(k.median_kernels)},
            {"names", names}};
  if (!k.graph_kernels.empty())
    j["graph_kernels"] = k.graph_kernels;
  return j;
}

json region_shares_json(const std::vector<region_share> &region_shares) {
  json shares = json::object();
  for (const auto &r : region_shares) {
    json one = {{"share_pct", finite_or_null(r.share_pct)},
                {"lo_pct", finite_or_null(r.lo_pct)},
                {"hi_pct", finite_or_null(r.hi_pct)}};
    if (r.kernel) {
      one["kernel_share_pct"] = finite_or_null(r.kernel_share_pct);
      one["kernel_lo_pct"] = finite_or_null(r.kernel_lo_pct);
      one["kernel_hi_pct"] = finite_or_null(r.kernel_hi_pct);
    }
    shares[r.label] = std::move(one);
  }
  return shares;
}

json roofline_json(const report_roofline &r) {
  return {{"read_bytes_per_step", r.read_bytes_per_step},
          {"write_bytes_per_step", r.write_bytes_per_step},
          {"roof_gbps", finite_or_null(r.roof_gbps)},
          {"pct_roof", finite_or_null(r.pct_roof)},
          {"compute", r.compute ? json(*r.compute) : json(nullptr)},
          {"flops_per_step", r.flops_per_step ? json(*r.flops_per_step) : json(nullptr)},
          {"tflops", finite_or_null(r.tflops)},
          {"pct_compute", finite_or_null(r.pct_compute)},
          {"intensity", finite_or_null(r.intensity)}};
}

/// The members of versions 2 to 4, where the cell holds them.
void add_later_members(json &j, const report_cell &c) {
  if (c.clock_mhz)
    j["clock_mhz"] = finite_or_null(*c.clock_mhz);
  if (c.harness_bytes_in_window)
    j["harness_bytes_in_window"] = *c.harness_bytes_in_window;
  if (c.first_call_ms)
    j["first_call_ms"] = finite_or_null(*c.first_call_ms);
  if (c.warmup_calls)
    j["warmup_calls"] = *c.warmup_calls;
  if (c.off_window_ms)
    j["off_window_ms"] = finite_or_null(*c.off_window_ms);
  if (c.kernel_clock)
    j["kernel_clock"] = kernel_clock_json(*c.kernel_clock);
  if (!c.regions_ms.empty())
    j["regions"] = c.regions_ms;
  if (!c.region_kernels_ms.empty())
    j["region_kernels"] = c.region_kernels_ms;
  if (!c.region_shares.empty())
    j["region_shares"] = region_shares_json(c.region_shares);
  if (!c.states.empty()) // version 7
    j["states"] = states_json(c.states);
  if (c.stop)
    j["stop"] = stop_json(*c.stop);
  if (!c.sched.empty()) // version 8
    j["sched"] = sched_json(c.sched);
  if (c.roofline) // version 8
    j["roofline"] = roofline_json(*c.roofline);
}

json instrument_json(const report_instrument &in, int schema_version) {
  json j = {{"ceiling_gbps", finite_or_null(in.ceiling_gbps)},
            {"ceiling_samples_gbps", in.ceiling_samples_gbps},
            {"ceiling_bytes", in.ceiling_bytes},
            {"launch_floor_ms", finite_or_null(in.launch_floor_ms)},
            {"timer_resolution_ms", finite_or_null(in.timer_resolution_ms)},
            {"flush_bytes", in.flush_bytes},
            {"flush_method", in.flush_method},
            {"llc_bytes", in.llc_bytes},
            {"clock_start_mhz", finite_or_null(in.clock_start_mhz)}};
  if (schema_version >= 4) {
    j["kernel_clock"] = in.kernel_clock;
    j["kernel_clock_floor_ms"] = finite_or_null(in.kernel_clock_floor_ms);
    j["kernel_records_dropped"] = in.kernel_records_dropped;
  }
  if (schema_version >= report_schema_version_roofs && in.roofs)
    j["roofs"] = roofs_json(*in.roofs);
  if (in.ceiling_reused) // version 8
    j["ceiling_reused"] = *in.ceiling_reused;
  return j;
}

json tool_json(const report_tool &t) {
  json j = {{"name", t.name},
            {"version", t.version},
            {"git_commit", t.git_commit},
            {"build_flags", t.build_flags}};
  if (t.renderer != 1) // renderer 1 is recorded by its absence: earlier reports stay as they are
    j["renderer"] = t.renderer;
  if (t.analysis != 1) // analysis 1 likewise
    j["analysis"] = t.analysis;
  return j;
}

json correctness_json(const report_correctness &c) {
  return key_members({{"max_abs_error", finite_or_null(c.max_abs_error)},
                      {"max_rel_error", finite_or_null(c.max_rel_error)},
                      {"unwritten", c.unwritten},
                      {"passed", c.passed},
                      {"detail", c.detail}},
                     c.key);
}

template <class T, class F> json list_json(const std::vector<T> &items, F one) {
  json out = json::array();
  for (const auto &item : items)
    out.push_back(one(item));
  return out;
}

} // namespace

std::string_view to_string(bound_kind b) {
  switch (b) {
  case bound_kind::launch:
    return "launch";
  case bound_kind::bandwidth:
    return "bandwidth";
  case bound_kind::neither:
    return "neither";
  case bound_kind::compute:
    return "compute";
  }
  return "?";
}

std::string_view to_string(verdict_kind v) {
  switch (v) {
  case verdict_kind::confirmed:
    return "confirmed";
  case verdict_kind::refuted:
    return "refuted";
  case verdict_kind::inconclusive:
    return "inconclusive";
  }
  return "?";
}

json to_json(const report_cell &c) {
  json j = key_members(json::object(), c.key);
  j["samples_ms"] = c.samples_ms;
  j["n"] = c.n;
  j["median_ms"] = finite_or_null(c.median_ms);
  j["q1_ms"] = finite_or_null(c.q1_ms);
  j["q3_ms"] = finite_or_null(c.q3_ms);
  j["iqr_ms"] = finite_or_null(c.iqr_ms);
  j["mean_ms"] = finite_or_null(c.mean_ms);
  j["min_ms"] = finite_or_null(c.min_ms);
  j["statistic_ms"] = finite_or_null(c.statistic_ms);
  j["spearman_rho"] = finite_or_null(c.spearman_rho);
  j["peak_bytes"] = c.peak_bytes;
  j["bytes_per_step"] = c.bytes_per_step;
  j["gbps"] = finite_or_null(c.gbps);
  j["pct_ceiling"] = finite_or_null(c.pct_ceiling);
  j["bound"] = std::string(to_string(c.bound));
  j["flags"] = c.flags;
  j["error"] = c.error ? json(*c.error) : json(nullptr);
  add_later_members(j, c);
  return j;
}

json to_json(const prediction_result &r) {
  json cells = json::array();
  for (const auto &c : r.cells) {
    json j = shape_json(cell_key{"", c.pass, c.rows, c.cols, c.shape});
    j["pass"] = std::string(to_string(c.pass));
    j["p"] = c.p ? json(*c.p) : json(nullptr);
    cells.push_back(std::move(j));
  }
  return {{"id", r.id},         {"claim", r.claim},
          {"expect", r.expect}, {"verdict", std::string(to_string(r.verdict))},
          {"cells", cells},     {"reason", r.reason}};
}

json to_json(const report_defect &d) {
  json j = {{"code", d.code}, {"message", d.message}, {"evidence", d.evidence}};
  if (d.cell)
    j["cell"] = to_json(*d.cell);
  return j;
}

json to_json(const report_deviation &d) {
  json j = d.extra.is_object() ? d.extra : json::object();
  j["kind"] = d.kind;
  j["message"] = d.message;
  if (d.cell)
    j["cell"] = to_json(*d.cell);
  return j;
}

json to_json(const report_document &r) {
  const auto one = [](const auto &item) { return to_json(item); };
  json out = {
      {"schema_version", r.schema_version},
      {"tool", tool_json(r.tool)},
      {"protocol",
       {{"hash", r.protocol.hash}, {"body", r.protocol.body}, {"freeze", r.protocol.freeze}}},
      {"run", run_json(r.run)},
      {"environment", r.environment},
      {"instrument", instrument_json(r.instrument, r.schema_version)},
      {"cells", list_json(r.cells, one)},
      {"correctness", list_json(r.correctness, correctness_json)},
      {"predictions", list_json(r.predictions, one)},
      {"defects", list_json(r.defects, one)},
      {"deviations", list_json(r.deviations, one)},
      {"attempt", r.attempt}};
  if (r.exploratory)
    out["exploratory"] = true;
  if (r.shard)
    out["shard"] = to_json(*r.shard);
  if (r.phases) {
    const auto list = [](const std::vector<phase_time> &v) {
      json a = json::array();
      for (const auto &p : v)
        a.push_back({{"name", p.name}, {"ms", p.ms}});
      return a;
    };
    out["phases"] = {{"wall_ms", r.phases->wall_ms},
                     {"list", list(r.phases->list)},
                     {"timing", list(r.phases->timing)}};
  }
  return out;
}

} // namespace prereg
