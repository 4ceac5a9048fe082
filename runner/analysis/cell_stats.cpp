// Per-cell statistics, `bound` and `flags`; thresholds are in cell_stats.hpp (region shares:
// region_shares.cpp).
#include "analysis/cell_stats.hpp"

#include "analysis/roofline.hpp"

#include "base/stats.hpp"
#include "prereg/error.hpp"
#include "spec/bytes_model.hpp"
#include "spec/records.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace prereg {
namespace {

const arm_spec &spec_of(const protocol &proto, const std::string &id) {
  if (const arm_spec *a = find_arm_spec(proto, id))
    return *a;
  throw invalid_input(fmt::format("cell names arm '{}', which the protocol lacks", id));
}

/// The sample statistics, the bytes and bandwidth, and stability.
cell_statistics summarise(const cell_record &cell, const protocol &proto, const arm_spec &arm,
                          const instrument_record &instrument) {
  const std::span<const double> s = cell.samples_ms;
  cell_statistics out;
  out.key = cell.key;
  out.n = s.size();
  out.median_ms = median(s);
  out.q1_ms = q1(s);
  out.q3_ms = q3(s);
  out.iqr_ms = out.q3_ms - out.q1_ms;
  out.mean_ms = mean(s);
  out.min_ms = minimum(s);
  out.statistic_ms = statistic(s, proto.analysis.statistic);
  out.spearman_rho = spearman_vs_index(s);
  out.peak_bytes = cell.peak_bytes;
  out.bytes_per_step = bytes_per_step(proto.op, proto.type, cell.key, arm.repeat);
  out.gbps = gbps(out.bytes_per_step, out.statistic_ms);
  out.pct_ceiling = pct_ceiling(out.gbps, instrument.ceiling_gbps);
  out.unstable = is_unstable(out.iqr_ms, out.median_ms, proto.analysis.unstable_iqr_ratio);
  return out;
}

/// Throws unless the kernel clock has one time and one count per sample, and each kernel name
/// one time per sample.
void check_kernel_record(const cell_record &cell) {
  const std::size_t samples = cell.samples_ms.size();
  if (cell.kernel_ms.size() != samples || cell.kernel_counts.size() != samples)
    throw invalid_input(fmt::format("cell {} has {} kernel times and {} kernel counts "
                                    "for {} samples",
                                    cell_label(cell.key), cell.kernel_ms.size(),
                                    cell.kernel_counts.size(), samples));
  for (const auto &n : cell.kernel_names)
    if (n.samples_ms.size() != samples)
      throw invalid_input(fmt::format("kernel {} of cell {} has {} times for {} samples", n.name,
                                      cell.key.arm, n.samples_ms.size(), samples));
}

/// The kernel clock's derived numbers of a cell that has kernel times.
kernel_statistics kernel_statistics_of(const cell_record &cell, const protocol &proto) {
  check_kernel_record(cell);
  const std::span<const double> s = cell.samples_ms;
  const std::span<const double> km = cell.kernel_ms;
  kernel_statistics k;
  std::vector<double> shares, counts;
  for (std::size_t i = 0; i < km.size(); ++i) {
    k.gap_ms.push_back(s[i] - km[i]);
    shares.push_back(gap_share_pct(s[i], km[i]));
    counts.push_back(static_cast<double>(cell.kernel_counts[i]));
  }
  k.median_kernel_ms = median(km);
  k.q1_kernel_ms = q1(km);
  k.q3_kernel_ms = q3(km);
  k.statistic_kernel_ms = statistic(km, proto.analysis.statistic);
  k.median_gap_ms = median(k.gap_ms);
  k.gap_share_pct = median(shares);
  k.median_kernels = median(counts);
  double step_sum = 0;
  for (const double v : s)
    step_sum += v;
  for (const auto &n : cell.kernel_names) {
    double sum = 0;
    for (const double v : n.samples_ms)
      sum += v;
    k.name_median_ms.push_back(median(n.samples_ms));
    k.name_share_pct.push_back(step_sum > 0.0 ? 100.0 * sum / step_sum : 0.0);
  }
  return k;
}

/// The cell's share of its bandwidth roof: of its read/write mix's roof where the instrument
/// has roofs and that roof is known, else of the copy ceiling.
double bandwidth_pct(const cell_statistics &st) {
  return st.roofline && std::isfinite(st.roofline->pct_roof) ? st.roofline->pct_roof
                                                             : st.pct_ceiling;
}

/// Past launch: the roof the cell comes nearer (compute where its share of the compute ceiling
/// is known and not below its bandwidth share, i.e. its intensity is past the ridge), if it
/// reaches 60% of that roof.
bound_kind roof_bound(const cell_statistics &st) {
  const double bandwidth = bandwidth_pct(st);
  if (st.roofline && std::isfinite(st.roofline->pct_compute) &&
      !(st.roofline->pct_compute <= bandwidth))
    return st.roofline->pct_compute >= thresholds::bandwidth_bound_pct ? bound_kind::compute
                                                                       : bound_kind::neither;
  if (bandwidth >= thresholds::bandwidth_bound_pct)
    return bound_kind::bandwidth;
  return bound_kind::neither;
}

/// What limits the cell: with a kernel clock its gap share, else the launch floor's multiple;
/// then the roof it comes nearer (without roofs: the share of the copy ceiling).
bound_kind bound_of(const cell_statistics &st, const arm_spec &arm,
                    const instrument_record &instrument) {
  const double launch_limit_ms = thresholds::launch_bound_factor * instrument.launch_floor_ms *
                                 static_cast<double>(arm.repeat);
  if (st.kernel) {
    // The kernel clock measures what the floor multiple only estimated (docs/analysis.md).
    if (st.n > 0 && st.kernel->gap_share_pct >= thresholds::launch_gap_share_pct)
      return bound_kind::launch;
    return roof_bound(st);
  }
  if (instrument.launch_floor_ms > 0.0 && st.median_ms < launch_limit_ms)
    return bound_kind::launch;
  return roof_bound(st);
}

/// The cell's flags, in the documented order.
std::vector<std::string> flags_of(const cell_statistics &st, const cell_record &cell,
                                  const instrument_record &instrument,
                                  std::span<const correctness_record> checks) {
  std::vector<std::string> flags;
  const correctness_record *check = find_correctness(checks, cell.key);
  if (cell.error)
    flags.emplace_back("error");
  if (st.n == 0)
    flags.emplace_back("no-samples");
  if (check != nullptr && !check->passed)
    flags.emplace_back("correctness-failure");
  if (st.unstable)
    flags.emplace_back("unstable");
  if (bandwidth_pct(st) > thresholds::above_ceiling_pct) // with roofs: of the mix's roof
    flags.emplace_back("above-ceiling");
  if (instrument.timer_resolution_ms > 0.0 &&
      st.median_ms < thresholds::timer_resolution_factor * instrument.timer_resolution_ms)
    flags.emplace_back("timer-resolution");
  if (st.n >= thresholds::drift_min_samples &&
      std::fabs(st.spearman_rho) > thresholds::drift_abs_rho)
    flags.emplace_back("drift");
  if (instrument.clock_start_mhz > 0.0 && cell.clock_mhz > 0.0 &&
      cell.clock_mhz < thresholds::clock_throttle_ratio * instrument.clock_start_mhz)
    flags.emplace_back("clock-throttle");
  if (cell.harness_bytes_in_window > 0)
    flags.emplace_back("harness-allocation");
  return flags;
}

} // namespace

double gap_share_pct(double step_ms, double kernel_ms) {
  return step_ms > 0.0 ? 100.0 * (step_ms - kernel_ms) / step_ms : 0.0;
}

bool is_unstable(double iqr_ms, double median_ms, double ratio) {
  if (std::isnan(iqr_ms) || std::isnan(median_ms))
    return false;
  if (median_ms <= 0.0)
    return iqr_ms > 0.0;
  return iqr_ms / median_ms > ratio;
}

bool has_off_window_work(double off_window_ms, std::size_t n, double median_ms) {
  return std::isfinite(off_window_ms) && n > 0 && off_window_ms > thresholds::off_window_min_ms &&
         off_window_ms > thresholds::off_window_ratio * median_ms;
}

std::vector<std::size_t> stopped_samples(std::span<const sched_sample> sched) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < sched.size(); ++i)
    if (sched[i].stops > 0)
      out.push_back(i);
  return out;
}

std::vector<std::size_t> descheduled_samples(std::span<const sched_sample> sched) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < sched.size(); ++i) {
    const double d = sched[i].run_delay_ms;
    if (std::isfinite(d) && d >= thresholds::descheduled_min_ms &&
        d >= thresholds::descheduled_share * sched[i].wall_ms)
      out.push_back(i);
  }
  return out;
}

const correctness_record *find_correctness(std::span<const correctness_record> all,
                                           const cell_key &key) {
  const auto it = std::find_if(all.begin(), all.end(),
                               [&](const correctness_record &c) { return c.key == key; });
  return it == all.end() ? nullptr : &*it;
}

cell_statistics compute_cell_statistics(const cell_record &cell, const protocol &proto,
                                        const instrument_record &instrument,
                                        std::span<const correctness_record> checks) {
  const arm_spec &arm = spec_of(proto, cell.key.arm);
  cell_statistics out = summarise(cell, proto, arm, instrument);
  if (instrument.roofs)
    out.roofline = roofline_of(proto, cell.key, arm.repeat, out.statistic_ms, out.gbps,
                               out.bytes_per_step, instrument);
  if (!cell.kernel_ms.empty())
    out.kernel = kernel_statistics_of(cell, proto);
  out.bound = bound_of(out, arm, instrument);
  out.flags = flags_of(out, cell, instrument, checks);
  out.region_shares =
      compute_region_shares(cell, proto.analysis.bootstrap_resamples, proto.analysis.confidence);
  return out;
}

std::vector<cell_statistics> compute_cell_statistics(const protocol &proto, const raw_run &run) {
  std::vector<cell_statistics> out;
  out.reserve(run.cells.size());
  for (const auto &cell : run.cells) {
    out.push_back(compute_cell_statistics(cell, proto, run.instrument, run.correctness));
  }
  return out;
}

} // namespace prereg
