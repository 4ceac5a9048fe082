// The strict reader of one cells[] entry: the version-1 members, then what versions 2, 3 and 4
// added (the clock and harness bytes; first call, warm-up, off-window work and regions; the
// kernel clock).
#include "model/report_reader.hpp"

#include "prereg/error.hpp"
#include "spec/device_state.hpp"
#include "spec/sched.hpp"

#include <fmt/format.h>

#include <cmath>

namespace prereg::model_detail {
namespace {

constexpr std::array<std::string_view, 21> cell_members_v1{
    "arm",          "pass",         "rows",       "cols",           "samples_ms", "n",
    "median_ms",    "q1_ms",        "q3_ms",      "iqr_ms",         "mean_ms",    "min_ms",
    "statistic_ms", "spearman_rho", "peak_bytes", "bytes_per_step", "gbps",       "pct_ceiling",
    "bound",        "flags",        "error"};
constexpr auto cell_members_v2 = joined(
    cell_members_v1, std::array<std::string_view, 2>{"clock_mhz", "harness_bytes_in_window"});
/// Versions 3 and 4 (kernel_clock and region_kernels are read only from version 4); the
/// named-axes version adds `shape` (and drops rows, cols: read_cell checks which it has).
constexpr auto cell_members_v3 = joined(
    cell_members_v2,
    std::array<std::string_view, 7>{"first_call_ms", "warmup_calls", "off_window_ms",
                                    "kernel_clock", "regions", "region_shares", "region_kernels"});

constexpr auto cell_members_named =
    joined(cell_members_v3, std::array<std::string_view, 1>{"shape"});
/// Version 7: either key form, and the device's state and the stop record.
constexpr auto cell_members_state =
    joined(cell_members_named, std::array<std::string_view, 2>{"states", "stop"});
/// Version 8: the roofs' cell member and the scheduling per sample.
constexpr auto cell_members_v8 =
    joined(cell_members_state, std::array<std::string_view, 2>{"roofline", "sched"});

/// "has N values for M samples" unless `size` is `samples`.
void check_per_sample(const node &n, std::size_t size, std::size_t samples) {
  if (size != samples)
    n.fail(fmt::format("has {} values for {} samples", size, samples));
}

/// A cell's kernel clock: kernel_ms, gap_ms, kernels (and graph_kernels), one per sample.
void read_kernel_samples(const node &n, std::size_t samples, report_kernel_clock &k) {
  k.kernel_ms = n["kernel_ms"].numbers();
  k.gap_ms = n["gap_ms"].numbers();
  const node counts = n["kernels"];
  for (std::size_t i = 0; i < counts.array_size(); ++i)
    k.kernels.push_back(static_cast<std::int64_t>(counts.at(i).count()));
  check_per_sample(n["kernel_ms"], k.kernel_ms.size(), samples);
  check_per_sample(n["gap_ms"], k.gap_ms.size(), samples);
  check_per_sample(counts, k.kernels.size(), samples);
  if (n.has("graph_kernels")) {
    const node graph = n["graph_kernels"];
    for (std::size_t i = 0; i < graph.array_size(); ++i) {
      k.graph_kernels.push_back(static_cast<std::int64_t>(graph.at(i).count()));
      if (i < k.kernels.size() && k.graph_kernels.back() > k.kernels[i])
        graph.at(i).fail("is more than the sample's kernels");
    }
    check_per_sample(graph, k.graph_kernels.size(), samples);
  }
  for (std::size_t i = 0; i < samples; ++i)
    if (k.kernel_ms[i] < 0)
      n["kernel_ms"].at(i).fail("is negative");
}

report_kernel_name read_kernel_name(const node &e, std::size_t samples) {
  e.only({"name", "calls", "samples_ms", "median_ms", "share_pct"});
  report_kernel_name r;
  r.name = e["name"].str();
  r.calls = static_cast<std::int64_t>(e["calls"].count());
  r.samples_ms = e["samples_ms"].numbers();
  check_per_sample(e["samples_ms"], r.samples_ms.size(), samples);
  r.median_ms = e["median_ms"].number_or_null();
  r.share_pct = e["share_pct"].number_or_null();
  return r;
}

report_kernel_clock read_kernel_clock(const node &n, std::size_t samples) {
  n.only({"kernel_ms", "gap_ms", "kernels", "graph_kernels", "median_kernel_ms", "q1_kernel_ms",
          "q3_kernel_ms", "statistic_kernel_ms", "median_gap_ms", "gap_share_pct", "median_kernels",
          "names"});
  report_kernel_clock k;
  read_kernel_samples(n, samples, k);
  k.median_kernel_ms = n["median_kernel_ms"].number_or_null();
  k.q1_kernel_ms = n["q1_kernel_ms"].number_or_null();
  k.q3_kernel_ms = n["q3_kernel_ms"].number_or_null();
  k.statistic_kernel_ms = n["statistic_kernel_ms"].number_or_null();
  k.median_gap_ms = n["median_gap_ms"].number_or_null();
  k.gap_share_pct = n["gap_share_pct"].number_or_null();
  k.median_kernels = n["median_kernels"].number_or_null();
  const node names = n["names"];
  for (std::size_t i = 0; i < names.array_size(); ++i)
    k.names.push_back(read_kernel_name(names.at(i), samples));
  return k;
}

bound_kind read_bound(const node &n, int version) {
  const std::string s = n.str();
  for (const bound_kind b : {bound_kind::launch, bound_kind::bandwidth, bound_kind::neither})
    if (s == to_string(b))
      return b;
  if (version >= report_schema_version_roofs && s == to_string(bound_kind::compute))
    return bound_kind::compute;
  n.fail(fmt::format("is '{}', not launch, bandwidth or neither{}", message_excerpt(s),
                     version >= report_schema_version_roofs ? " or compute" : ""));
}

/// A version-8 cell's `roofline` (docs/report.md).
report_roofline read_roofline(const node &n) {
  n.only({"read_bytes_per_step", "write_bytes_per_step", "roof_gbps", "pct_roof", "compute",
          "flops_per_step", "tflops", "pct_compute", "intensity"});
  report_roofline r;
  r.read_bytes_per_step = n["read_bytes_per_step"].count();
  r.write_bytes_per_step = n["write_bytes_per_step"].count();
  r.roof_gbps = n["roof_gbps"].number_or_null();
  r.pct_roof = n["pct_roof"].number_or_null();
  if (!n["compute"].value().is_null())
    r.compute = n["compute"].str();
  if (!n["flops_per_step"].value().is_null())
    r.flops_per_step = n["flops_per_step"].count();
  r.tflops = n["tflops"].number_or_null();
  r.pct_compute = n["pct_compute"].number_or_null();
  r.intensity = n["intensity"].number_or_null();
  return r;
}

/// `regions` or `region_kernels`: label -> a finite, non-negative time per sample; a label of
/// region_kernels must be one of `regions` (when given).
std::map<std::string, std::vector<double>>
read_region_times(const node &r, std::size_t samples,
                  const std::map<std::string, std::vector<double>> *regions) {
  if (!r.value().is_object() || r.value().empty())
    r.fail("is not a non-empty object of region labels");
  std::map<std::string, std::vector<double>> out;
  for (const auto &[label, _] : r.value().items()) {
    const node times = r[label];
    if (regions != nullptr && !regions->contains(label))
      times.fail("names a region that `regions` does not have");
    auto ms = times.numbers();
    if (ms.size() != samples)
      times.fail(fmt::format("has {} times for {} samples", ms.size(), samples));
    for (const double t : ms)
      if (!std::isfinite(t) || t < 0.0)
        times.fail("holds a time that is not finite and non-negative");
    out[label] = std::move(ms);
  }
  return out;
}

region_share read_region_share(const node &one, const std::string &label) {
  region_share sh;
  sh.label = label;
  sh.kernel = one.value().contains("kernel_share_pct");
  if (sh.kernel)
    one.only(
        {"share_pct", "lo_pct", "hi_pct", "kernel_share_pct", "kernel_lo_pct", "kernel_hi_pct"});
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
  return sh;
}

// A version-3 cell's optional `regions` (label -> ms per sample) and `region_shares` (label ->
// {share_pct, lo_pct, hi_pct}); absent when the arm marked no region.
void read_regions(const node &n, report_cell &c) {
  if (n.value().contains("regions"))
    c.regions_ms = read_region_times(n["regions"], c.samples_ms.size(), nullptr);
  if (n.value().contains("region_kernels")) // version 4, with the kernel clock
    c.region_kernels_ms =
        read_region_times(n["region_kernels"], c.samples_ms.size(), &c.regions_ms);
  if (n.value().contains("region_shares")) {
    const node r = n["region_shares"];
    if (!r.value().is_object())
      r.fail("is not an object of region labels");
    for (const auto &[label, _] : r.value().items())
      c.region_shares.push_back(read_region_share(r[label], label));
  }
}

/// The members every version has.
report_cell read_cell_v1(const node &n, int version) {
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
  c.bound = read_bound(n["bound"], version);
  c.flags = n["flags"].strings();
  if (const node e = n["error"]; !e.value().is_null())
    c.error = e.str();
  return c;
}

/// Version 3's members: the first call, the warm-up, off-window work and the regions.
void read_cell_v3(const node &n, report_cell &c) {
  c.first_call_ms = n["first_call_ms"].number_or_null();
  c.warmup_calls = static_cast<std::int64_t>(n["warmup_calls"].count());
  c.off_window_ms = n["off_window_ms"].number_or_null();
  read_regions(n, c);
}

/// Version 7's members: the device's state per sample and the stop record.
void read_cell_v7(const node &n, report_cell &c) {
  if (n.has("states"))
    if (const std::string bad =
            read_states_json(n["states"].value(), c.samples_ms.size(), c.states);
        !bad.empty())
      n["states"].fail(bad);
  if (n.has("stop")) {
    c.stop.emplace();
    if (const std::string bad = read_stop_json(n["stop"].value(), *c.stop); !bad.empty())
      n["stop"].fail(bad);
  }
}

} // namespace

report_cell read_cell(const node &n, int version) {
  // Version 7 cells name their shape either way (the report's operation decides); 6 always.
  const bool named = version == report_schema_version_named ||
                     (version >= report_schema_version_state && n.has("shape"));
  if (version >= report_schema_version_roofs)
    n.only_of(cell_members_v8);
  else if (version >= report_schema_version_state)
    n.only_of(cell_members_state);
  else if (named)
    n.only_of(cell_members_named);
  else if (version >= 3)
    n.only_of(cell_members_v3);
  else if (version >= 2)
    n.only_of(cell_members_v2);
  else
    n.only_of(cell_members_v1);
  if (version <= report_schema_version_named && named != n.has("shape"))
    n.fail(named ? fmt::format("has no shape (a version-{} cell names its axes)", version)
                 : fmt::format("has a shape (a version-{} member)", report_schema_version_named));
  report_cell c = read_cell_v1(n, version);
  if (version >= 2) { // the clock after the cell and the harness's bytes in a window
    c.clock_mhz = n["clock_mhz"].number_or_null();
    c.harness_bytes_in_window = n["harness_bytes_in_window"].count();
  }
  if (version >= 3)
    read_cell_v3(n, c);
  if (version >= 4 && n.has("kernel_clock"))
    c.kernel_clock = read_kernel_clock(n["kernel_clock"], c.samples_ms.size());
  if (version >= report_schema_version_state)
    read_cell_v7(n, c);
  if (version >= report_schema_version_hardened && n.has("sched"))
    if (const std::string bad = read_sched_json(n["sched"].value(), c.samples_ms.size(), c.sched);
        !bad.empty())
      n["sched"].fail(bad);
  if (version >= report_schema_version_roofs && n.has("roofline"))
    c.roofline = read_roofline(n["roofline"]);
  if (!c.region_kernels_ms.empty() && (version < 4 || !c.kernel_clock))
    n["region_kernels"].fail(version < 4 ? "is a version-4 member"
                                         : "is there without the cell's kernel_clock");
  return c;
}

} // namespace prereg::model_detail
