// The report model's serialiser and strict parser: one function per struct, each way.
#include "model/report_model.hpp"

#include "base/json_reader.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>

namespace prereg {
namespace {

// ---- strict reading: every failure names the JSON path ---------------------------------------

/// A report's reading failure: invalid_input naming the path ("report" for the root).
class report_fault final : public json_fault {
public:
  explicit report_fault(const std::string &where) : m_where(where) {}
  [[noreturn]] void fail(const std::string &path, std::string_view problem) const override {
    throw invalid_input(fmt::format("{} {}", path.empty() ? "report" : path, problem), m_where);
  }

private:
  const std::string &m_where;
};

/// A JSON value at a path of the report, read strictly (base/json_reader.hpp).
class node : public json_node {
public:
  node(const json_node &n) : json_node(n) {} // NOLINT: every child of a node is a node
  node(const json &j, std::string path, const report_fault &fault)
      : json_node(j, std::move(path), fault) {}

  [[nodiscard]] node operator[](std::string_view key) const { return json_node::operator[](key); }
  [[nodiscard]] node at(std::size_t i) const { return json_node::at(i); }
  const node &object() const {
    json_node::object();
    return *this;
  }
  /// This object, which must hold only `allowed` keys.
  const node &only(std::initializer_list<std::string_view> allowed) const {
    json_node::only(allowed, "is not a member of the report format");
    return *this;
  }
  [[nodiscard]] pass_kind pass() const {
    const std::string s = str();
    if (s == "fwd")
      return pass_kind::fwd;
    if (s == "fwd+bwd")
      return pass_kind::fwd_bwd;
    fail(fmt::format("is '{}', not fwd or fwd+bwd", message_excerpt(s)));
  }
};

cell_key read_key(const node &n) {
  return {n["arm"].str(), n["pass"].pass(), n["rows"].integer(), n["cols"].integer()};
}

json key_members(json j, const cell_key &k) {
  j["arm"] = k.arm;
  j["pass"] = std::string(to_string(k.pass));
  j["rows"] = k.rows;
  j["cols"] = k.cols;
  return j;
}

// ---- one reader per struct -------------------------------------------------------------------

report_tool read_tool(const node &n) {
  n.only({"name", "version", "git_commit", "build_flags", "renderer"});
  report_tool t{n["name"].str(), n["version"].str(), n["git_commit"].str(), n["build_flags"].str()};
  if (n.has("renderer")) {
    const std::int64_t v = n["renderer"].integer();
    if (v < 2 || v > report_renderer_version) // 1 is written as absence
      n["renderer"].fail(fmt::format("must be an integer from 2 to {} (this build's renderers)",
                                     report_renderer_version));
    t.renderer = static_cast<int>(v);
  }
  return t;
}

report_protocol read_protocol(const node &n) {
  n.only({"hash", "body", "freeze"});
  report_protocol p;
  p.hash = n["hash"].str();
  p.body = n["body"].object().value();
  p.freeze = n["freeze"].object().value();
  return p;
}

report_run read_run(const node &n) {
  n.only({"run_id", "started_at", "finished_at", "device_ordinal", "ledger_head"});
  report_run r{n["run_id"].str(), n["started_at"].str(), n["finished_at"].str(),
               n["device_ordinal"].integer(), std::nullopt};
  if (n.has("ledger_head")) {
    const node h = n["ledger_head"];
    h.only({"seq", "sha256"});
    r.ledger_head = report_ledger_head{h["seq"].integer(), h["sha256"].str()};
  }
  return r;
}

json run_json(const report_run &run) {
  json j = {{"run_id", run.run_id},
            {"started_at", run.started_at},
            {"finished_at", run.finished_at},
            {"device_ordinal", run.device_ordinal}};
  if (run.ledger_head)
    j["ledger_head"] = {{"seq", run.ledger_head->seq}, {"sha256", run.ledger_head->sha256}};
  return j;
}

report_instrument read_instrument(const node &n, int version) {
  if (version >= 4)
    n.only({"ceiling_gbps", "ceiling_samples_gbps", "ceiling_bytes", "launch_floor_ms",
            "timer_resolution_ms", "flush_bytes", "flush_method", "llc_bytes", "clock_start_mhz",
            "kernel_clock", "kernel_clock_floor_ms", "kernel_records_dropped"});
  else
    n.only({"ceiling_gbps", "ceiling_samples_gbps", "ceiling_bytes", "launch_floor_ms",
            "timer_resolution_ms", "flush_bytes", "flush_method", "llc_bytes", "clock_start_mhz"});
  report_instrument in;
  in.ceiling_gbps = n["ceiling_gbps"].number_or_null();
  in.ceiling_samples_gbps = n["ceiling_samples_gbps"].numbers();
  in.ceiling_bytes = n["ceiling_bytes"].count();
  in.launch_floor_ms = n["launch_floor_ms"].number_or_null();
  in.timer_resolution_ms = n["timer_resolution_ms"].number_or_null();
  in.flush_bytes = n["flush_bytes"].count();
  in.flush_method = n["flush_method"].str();
  in.llc_bytes = n["llc_bytes"].count();
  in.clock_start_mhz = n["clock_start_mhz"].number_or_null();
  if (version >= 4) {
    in.kernel_clock = n["kernel_clock"].str();
    in.kernel_clock_floor_ms = n["kernel_clock_floor_ms"].number_or_null();
    in.kernel_records_dropped = n["kernel_records_dropped"].count();
  }
  return in;
}

report_kernel_clock read_kernel_clock(const node &n, std::size_t samples) {
  n.only({"kernel_ms", "gap_ms", "kernels", "graph_kernels", "median_kernel_ms", "q1_kernel_ms",
          "q3_kernel_ms", "statistic_kernel_ms", "median_gap_ms", "gap_share_pct", "median_kernels",
          "names"});
  report_kernel_clock k;
  k.kernel_ms = n["kernel_ms"].numbers();
  k.gap_ms = n["gap_ms"].numbers();
  const node counts = n["kernels"];
  for (std::size_t i = 0; i < counts.array_size(); ++i)
    k.kernels.push_back(static_cast<std::int64_t>(counts.at(i).count()));
  if (k.kernel_ms.size() != samples)
    n["kernel_ms"].fail(fmt::format("has {} values for {} samples", k.kernel_ms.size(), samples));
  if (k.gap_ms.size() != samples)
    n["gap_ms"].fail(fmt::format("has {} values for {} samples", k.gap_ms.size(), samples));
  if (k.kernels.size() != samples)
    counts.fail(fmt::format("has {} values for {} samples", k.kernels.size(), samples));
  if (n.has("graph_kernels")) {
    const node graph = n["graph_kernels"];
    for (std::size_t i = 0; i < graph.array_size(); ++i) {
      k.graph_kernels.push_back(static_cast<std::int64_t>(graph.at(i).count()));
      if (i < k.kernels.size() && k.graph_kernels.back() > k.kernels[i])
        graph.at(i).fail("is more than the sample's kernels");
    }
    if (k.graph_kernels.size() != samples)
      graph.fail(fmt::format("has {} values for {} samples", k.graph_kernels.size(), samples));
  }
  for (std::size_t i = 0; i < samples; ++i)
    if (k.kernel_ms[i] < 0)
      n["kernel_ms"].at(i).fail("is negative");
  k.median_kernel_ms = n["median_kernel_ms"].number_or_null();
  k.q1_kernel_ms = n["q1_kernel_ms"].number_or_null();
  k.q3_kernel_ms = n["q3_kernel_ms"].number_or_null();
  k.statistic_kernel_ms = n["statistic_kernel_ms"].number_or_null();
  k.median_gap_ms = n["median_gap_ms"].number_or_null();
  k.gap_share_pct = n["gap_share_pct"].number_or_null();
  k.median_kernels = n["median_kernels"].number_or_null();
  const node names = n["names"];
  for (std::size_t i = 0; i < names.array_size(); ++i) {
    const node e = names.at(i);
    e.only({"name", "calls", "samples_ms", "median_ms", "share_pct"});
    report_kernel_name r;
    r.name = e["name"].str();
    r.calls = static_cast<std::int64_t>(e["calls"].count());
    r.samples_ms = e["samples_ms"].numbers();
    if (r.samples_ms.size() != samples)
      e["samples_ms"].fail(
          fmt::format("has {} values for {} samples", r.samples_ms.size(), samples));
    r.median_ms = e["median_ms"].number_or_null();
    r.share_pct = e["share_pct"].number_or_null();
    k.names.push_back(std::move(r));
  }
  return k;
}

bound_kind read_bound(const node &n) {
  const std::string s = n.str();
  for (const bound_kind b : {bound_kind::launch, bound_kind::bandwidth, bound_kind::neither})
    if (s == to_string(b))
      return b;
  n.fail(fmt::format("is '{}', not launch, bandwidth or neither", message_excerpt(s)));
}

// A version-3 cell's optional `regions` (label -> ms per sample) and `region_shares` (label ->
// {share_pct, lo_pct, hi_pct}); absent when the arm marked no region.
void read_regions(const node &n, report_cell &c) {
  if (n.value().contains("regions")) {
    const node r = n["regions"];
    if (!r.value().is_object() || r.value().empty())
      r.fail("is not a non-empty object of region labels");
    for (const auto &[label, _] : r.value().items()) {
      const node times = r[label];
      auto ms = times.numbers();
      if (ms.size() != c.samples_ms.size())
        times.fail(fmt::format("has {} times for {} samples", ms.size(), c.samples_ms.size()));
      for (const double t : ms)
        if (!std::isfinite(t) || t < 0.0)
          times.fail("holds a time that is not finite and non-negative");
      c.regions_ms[label] = std::move(ms);
    }
  }
  if (n.value().contains("region_kernels")) { // version 4, with the kernel clock
    const node r = n["region_kernels"];
    if (!r.value().is_object() || r.value().empty())
      r.fail("is not a non-empty object of region labels");
    for (const auto &[label, _] : r.value().items()) {
      const node times = r[label];
      if (!c.regions_ms.contains(label))
        times.fail("names a region that `regions` does not have");
      auto ms = times.numbers();
      if (ms.size() != c.samples_ms.size())
        times.fail(fmt::format("has {} times for {} samples", ms.size(), c.samples_ms.size()));
      for (const double t : ms)
        if (!std::isfinite(t) || t < 0.0)
          times.fail("holds a time that is not finite and non-negative");
      c.region_kernels_ms[label] = std::move(ms);
    }
  }
  if (n.value().contains("region_shares")) {
    const node r = n["region_shares"];
    if (!r.value().is_object())
      r.fail("is not an object of region labels");
    for (const auto &[label, _] : r.value().items()) {
      const node one = r[label];
      region_share sh;
      sh.label = label;
      sh.kernel = one.value().contains("kernel_share_pct");
      if (sh.kernel)
        one.only({"share_pct", "lo_pct", "hi_pct", "kernel_share_pct", "kernel_lo_pct",
                  "kernel_hi_pct"});
      else
        one.only({"share_pct", "lo_pct", "hi_pct"});
      sh.share_pct = one["share_pct"].number_or_null();
      sh.lo_pct = one["lo_pct"].number_or_null();
      sh.hi_pct = one["hi_pct"].number_or_null();
      if (sh.kernel) {
        sh.kernel_share_pct = one["kernel_share_pct"].number_or_null();
        sh.kernel_lo_pct = one["kernel_lo_pct"].number_or_null();
        sh.kernel_hi_pct = one["kernel_hi_pct"].number_or_null();
      }
      c.region_shares.push_back(std::move(sh));
    }
  }
}

report_cell read_cell(const node &n, int version) {
  if (version >= 3)
    n.only({"arm",
            "pass",
            "rows",
            "cols",
            "samples_ms",
            "n",
            "median_ms",
            "q1_ms",
            "q3_ms",
            "iqr_ms",
            "mean_ms",
            "min_ms",
            "statistic_ms",
            "spearman_rho",
            "peak_bytes",
            "bytes_per_step",
            "gbps",
            "pct_ceiling",
            "bound",
            "flags",
            "error",
            "clock_mhz",
            "harness_bytes_in_window",
            "first_call_ms",
            "warmup_calls",
            "off_window_ms",
            "kernel_clock",
            "regions",
            "region_shares",
            "region_kernels"});
  else if (version >= 2)
    n.only({"arm",
            "pass",
            "rows",
            "cols",
            "samples_ms",
            "n",
            "median_ms",
            "q1_ms",
            "q3_ms",
            "iqr_ms",
            "mean_ms",
            "min_ms",
            "statistic_ms",
            "spearman_rho",
            "peak_bytes",
            "bytes_per_step",
            "gbps",
            "pct_ceiling",
            "bound",
            "flags",
            "error",
            "clock_mhz",
            "harness_bytes_in_window"});
  else
    n.only({"arm",          "pass",
            "rows",         "cols",
            "samples_ms",   "n",
            "median_ms",    "q1_ms",
            "q3_ms",        "iqr_ms",
            "mean_ms",      "min_ms",
            "statistic_ms", "spearman_rho",
            "peak_bytes",   "bytes_per_step",
            "gbps",         "pct_ceiling",
            "bound",        "flags",
            "error"});
  report_cell c;
  c.key = read_key(n);
  c.samples_ms = n["samples_ms"].numbers();
  c.n = n["n"].count();
  c.median_ms = n["median_ms"].number_or_null();
  c.q1_ms = n["q1_ms"].number_or_null();
  c.q3_ms = n["q3_ms"].number_or_null();
  c.iqr_ms = n["iqr_ms"].number_or_null();
  c.mean_ms = n["mean_ms"].number_or_null();
  c.min_ms = n["min_ms"].number_or_null();
  c.statistic_ms = n["statistic_ms"].number_or_null();
  c.spearman_rho = n["spearman_rho"].number_or_null();
  c.peak_bytes = n["peak_bytes"].count();
  c.bytes_per_step = n["bytes_per_step"].count();
  c.gbps = n["gbps"].number_or_null();
  c.pct_ceiling = n["pct_ceiling"].number_or_null();
  c.bound = read_bound(n["bound"]);
  c.flags = n["flags"].strings();
  if (const node e = n["error"]; !e.value().is_null())
    c.error = e.str();
  if (version >= 2) {
    c.clock_mhz = n["clock_mhz"].number_or_null();
    c.harness_bytes_in_window = n["harness_bytes_in_window"].count();
  }
  if (version >= 3) {
    c.first_call_ms = n["first_call_ms"].number_or_null();
    c.warmup_calls = static_cast<std::int64_t>(n["warmup_calls"].count());
    c.off_window_ms = n["off_window_ms"].number_or_null();
    read_regions(n, c);
  }
  if (version >= 4 && n.has("kernel_clock"))
    c.kernel_clock = read_kernel_clock(n["kernel_clock"], c.samples_ms.size());
  if (!c.region_kernels_ms.empty() && (version < 4 || !c.kernel_clock))
    n["region_kernels"].fail(version < 4 ? "is a version-4 member"
                                         : "is there without the cell's kernel_clock");
  return c;
}

report_correctness read_correctness(const node &n) {
  n.only({"arm", "pass", "rows", "cols", "max_abs_error", "max_rel_error", "unwritten", "passed",
          "detail"});
  report_correctness c;
  c.key = read_key(n);
  c.max_abs_error = n["max_abs_error"].number_or_null();
  c.max_rel_error = n["max_rel_error"].number_or_null();
  c.unwritten = n["unwritten"].boolean();
  c.passed = n["passed"].boolean();
  c.detail = n["detail"].str();
  return c;
}

verdict_kind read_verdict(const node &n) {
  const std::string s = n.str();
  for (const verdict_kind v :
       {verdict_kind::confirmed, verdict_kind::refuted, verdict_kind::inconclusive})
    if (s == to_string(v))
      return v;
  n.fail(fmt::format("is '{}', not confirmed, refuted or inconclusive", message_excerpt(s)));
}

prediction_result read_prediction(const node &n) {
  n.only({"id", "claim", "expect", "verdict", "cells", "reason"});
  prediction_result r;
  r.id = n["id"].str();
  r.claim = n["claim"].str();
  r.expect = n["expect"].str();
  r.verdict = read_verdict(n["verdict"]);
  const node cells = n["cells"];
  for (std::size_t i = 0; i < cells.array_size(); ++i) {
    const node c = cells.at(i);
    c.only({"pass", "rows", "cols", "p"});
    cell_p cp{c["pass"].pass(), c["rows"].integer(), c["cols"].integer(), std::nullopt};
    if (const node p = c["p"]; !p.value().is_null())
      cp.p = p.number();
    r.cells.push_back(cp);
  }
  r.reason = n["reason"].str();
  return r;
}

report_defect read_defect(const node &n) {
  n.only({"code", "cell", "message", "evidence"});
  report_defect d;
  d.code = n["code"].str();
  if (n.has("cell")) {
    const node c = n["cell"];
    c.only({"arm", "pass", "rows", "cols"});
    d.cell = read_key(c);
  }
  d.message = n["message"].str();
  d.evidence = n["evidence"].object().value();
  return d;
}

report_deviation read_deviation(const node &n) {
  n.object();
  report_deviation d;
  d.kind = n["kind"].str();
  d.message = n["message"].str();
  if (n.has("cell")) {
    const node c = n["cell"];
    c.only({"arm", "pass", "rows", "cols"});
    d.cell = read_key(c);
  }
  for (const auto &[k, v] : n.value().items())
    if (k != "kind" && k != "message" && k != "cell")
      d.extra[k] = v;
  return d;
}

template <class T, class F> std::vector<T> read_list(const node &n, F read) {
  std::vector<T> out;
  const std::size_t size = n.array_size();
  out.reserve(size);
  for (std::size_t i = 0; i < size; ++i)
    out.push_back(read(n.at(i)));
  return out;
}

int read_schema_version(const node &root) {
  const node v = root["schema_version"];
  const std::int64_t version = v.integer();
  if (version < report_schema_version_min || version > report_schema_version)
    v.fail(fmt::format("is {}; this build reads versions {} to {}", version,
                       report_schema_version_min, report_schema_version));
  return static_cast<int>(version);
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
  if (c.kernel_clock) {
    const report_kernel_clock &k = *c.kernel_clock;
    json names = json::array();
    for (const auto &n : k.names)
      names.push_back({{"name", n.name},
                       {"calls", n.calls},
                       {"samples_ms", n.samples_ms},
                       {"median_ms", finite_or_null(n.median_ms)},
                       {"share_pct", finite_or_null(n.share_pct)}});
    j["kernel_clock"] = {{"kernel_ms", k.kernel_ms},
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
      j["kernel_clock"]["graph_kernels"] = k.graph_kernels;
  }
  if (!c.regions_ms.empty())
    j["regions"] = c.regions_ms;
  if (!c.region_kernels_ms.empty())
    j["region_kernels"] = c.region_kernels_ms;
  if (!c.region_shares.empty()) {
    json shares = json::object();
    for (const auto &r : c.region_shares) {
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
    j["region_shares"] = shares;
  }
  return j;
}

json to_json(const prediction_result &r) {
  json cells = json::array();
  for (const auto &c : r.cells)
    cells.push_back({{"pass", std::string(to_string(c.pass))},
                     {"rows", c.rows},
                     {"cols", c.cols},
                     {"p", c.p ? json(*c.p) : json(nullptr)}});
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
  const report_instrument &in = r.instrument;
  json cells = json::array();
  for (const auto &c : r.cells)
    cells.push_back(to_json(c));
  json correctness = json::array();
  for (const auto &c : r.correctness)
    correctness.push_back(key_members({{"max_abs_error", finite_or_null(c.max_abs_error)},
                                       {"max_rel_error", finite_or_null(c.max_rel_error)},
                                       {"unwritten", c.unwritten},
                                       {"passed", c.passed},
                                       {"detail", c.detail}},
                                      c.key));
  json predictions = json::array();
  for (const auto &p : r.predictions)
    predictions.push_back(to_json(p));
  json defects = json::array();
  for (const auto &d : r.defects)
    defects.push_back(to_json(d));
  json deviations = json::array();
  for (const auto &d : r.deviations)
    deviations.push_back(to_json(d));
  json out = {
      {"schema_version", r.schema_version},
      {"tool",
       {{"name", r.tool.name},
        {"version", r.tool.version},
        {"git_commit", r.tool.git_commit},
        {"build_flags", r.tool.build_flags}}},
      {"protocol",
       {{"hash", r.protocol.hash}, {"body", r.protocol.body}, {"freeze", r.protocol.freeze}}},
      {"run", run_json(r.run)},
      {"environment", r.environment},
      {"instrument",
       {{"ceiling_gbps", finite_or_null(in.ceiling_gbps)},
        {"ceiling_samples_gbps", in.ceiling_samples_gbps},
        {"ceiling_bytes", in.ceiling_bytes},
        {"launch_floor_ms", finite_or_null(in.launch_floor_ms)},
        {"timer_resolution_ms", finite_or_null(in.timer_resolution_ms)},
        {"flush_bytes", in.flush_bytes},
        {"flush_method", in.flush_method},
        {"llc_bytes", in.llc_bytes},
        {"clock_start_mhz", finite_or_null(in.clock_start_mhz)}}},
      {"cells", cells},
      {"correctness", correctness},
      {"predictions", predictions},
      {"defects", defects},
      {"deviations", deviations},
      {"attempt", r.attempt}};
  if (r.tool.renderer !=
      1) // renderer 1 is recorded by its absence: earlier reports stay as they are
    out["tool"]["renderer"] = r.tool.renderer;
  if (r.exploratory)
    out["exploratory"] = true;
  if (r.schema_version >= 4) {
    json &ij = out["instrument"];
    ij["kernel_clock"] = in.kernel_clock;
    ij["kernel_clock_floor_ms"] = finite_or_null(in.kernel_clock_floor_ms);
    ij["kernel_records_dropped"] = in.kernel_records_dropped;
  }
  if (r.shard)
    out["shard"] = to_json(*r.shard);
  return out;
}

void check_report_members(const json &root, const std::string &where) {
  const report_fault fault(where);
  const node n(root, "", fault);
  n.only({"schema_version", "tool", "protocol", "run", "environment", "instrument", "cells",
          "correctness", "predictions", "defects", "deviations", "attempt", "exploratory",
          "shard"});
  (void)read_schema_version(n);
}

report_document report_from_json(const json &root, const std::string &where) {
  check_report_members(root, where);
  return report_from_json(root, where, report_part::all);
}

report_document report_from_json(const json &root, const std::string &where, unsigned parts) {
  const report_fault fault(where);
  const node n(root, "", fault);
  n.object();
  report_document r;
  const auto want = [&](unsigned part) { return (parts & part) != 0; };
  if (want(report_part::schema_version) || want(report_part::cells))
    r.schema_version = read_schema_version(n);
  if (want(report_part::tool))
    r.tool = read_tool(n["tool"]);
  if (want(report_part::protocol))
    r.protocol = read_protocol(n["protocol"]);
  if (want(report_part::run))
    r.run = read_run(n["run"]);
  if (want(report_part::environment))
    r.environment = n["environment"].object().value();
  if (want(report_part::instrument))
    r.instrument = read_instrument(n["instrument"], read_schema_version(n));
  if (want(report_part::cells))
    r.cells = read_list<report_cell>(n["cells"],
                                     [&](const node &c) { return read_cell(c, r.schema_version); });
  if (want(report_part::correctness))
    r.correctness = read_list<report_correctness>(n["correctness"], read_correctness);
  if (want(report_part::predictions))
    r.predictions = read_list<prediction_result>(n["predictions"], read_prediction);
  if (want(report_part::defects))
    r.defects = read_list<report_defect>(n["defects"], read_defect);
  if (want(report_part::deviations))
    r.deviations = read_list<report_deviation>(n["deviations"], read_deviation);
  if (want(report_part::attempt))
    r.attempt = n["attempt"].integer();
  if (n.has("exploratory")) {
    r.exploratory = n["exploratory"].boolean();
    if (!r.exploratory)
      n["exploratory"].fail("must be true when present");
  }
  if (root.is_object() && root.contains("shard"))
    r.shard = shard_from_json(root.at("shard"), where.empty() ? "shard" : where + "#/shard");
  return r;
}

cell_key cell_key_from_json(const json &j, const std::string &path, const std::string &where) {
  const report_fault fault(where);
  const node n(j, path, fault);
  n.only({"arm", "pass", "rows", "cols"});
  return read_key(n);
}

} // namespace prereg
