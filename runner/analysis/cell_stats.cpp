// Per-cell statistics, `bound` and `flags`; thresholds are in cell_stats.hpp.
#include "analysis/cell_stats.hpp"

#include "base/rng.hpp"
#include "base/stats.hpp"
#include "prereg/error.hpp"
#include "spec/bytes_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace prereg {
namespace {

const arm_spec &spec_of(const protocol &proto, const std::string &id) {
  if (const arm_spec *a = find_arm_spec(proto, id))
    return *a;
  throw invalid_input(fmt::format("cell names arm '{}', which the protocol lacks", id));
}

// FNV-1a over the bytes of the cell key and the label: the seed of a region's bootstrap.
std::uint64_t region_seed(const cell_key &key, const std::string &label) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const auto mix = [&](std::string_view s) {
    for (const unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
    h ^= 0xff; // separator
    h *= 0x100000001b3ull;
  };
  mix(key.arm);
  mix(to_string(key.pass));
  mix(std::to_string(key.rows));
  mix(std::to_string(key.cols));
  mix(label);
  return stream_seed(h, stream_id::bootstrap);
}

} // namespace

double gap_share_pct(double step_ms, double kernel_ms) {
  return step_ms > 0.0 ? 100.0 * (step_ms - kernel_ms) / step_ms : 0.0;
}

double region_share_pct(std::span<const double> samples, std::span<const double> region,
                        std::span<const std::size_t> pick) {
  double step = 0, part = 0;
  if (pick.empty()) {
    for (std::size_t i = 0; i < samples.size(); ++i) {
      step += samples[i];
      part += region[i];
    }
  } else {
    for (const std::size_t i : pick) {
      step += samples[i];
      part += region[i];
    }
  }
  return step > 0.0 ? 100.0 * part / step : std::numeric_limits<double>::quiet_NaN();
}

std::vector<region_share> compute_region_shares(const cell_record &cell, std::int64_t resamples,
                                                double confidence) {
  std::vector<region_share> out;
  const std::span<const double> s = cell.samples_ms;
  for (const auto &[label, times] : cell.region_kernels_ms) {
    const auto where = fmt::format("cell {} {} {}x{}: region '{}'", cell.key.arm,
                                   to_string(cell.key.pass), cell.key.rows, cell.key.cols, label);
    if (!cell.regions_ms.contains(label))
      throw invalid_input(where + " has kernel times but no region times");
    if (times.size() != s.size() || cell.kernel_ms.size() != s.size())
      throw invalid_input(fmt::format("{} has {} kernel times and the cell {} kernel times for {} "
                                      "samples",
                                      where, times.size(), cell.kernel_ms.size(), s.size()));
    for (const double t : times)
      if (!std::isfinite(t) || t < 0.0)
        throw invalid_input(where + " holds a kernel time that is not finite and non-negative");
  }
  for (const auto &[label, times] : cell.regions_ms) {
    if (times.size() != s.size())
      throw invalid_input(fmt::format("cell {} {} {}x{}: region '{}' has {} times for {} samples",
                                      cell.key.arm, to_string(cell.key.pass), cell.key.rows,
                                      cell.key.cols, label, times.size(), s.size()));
    for (const double t : times)
      if (!std::isfinite(t) || t < 0.0)
        throw invalid_input(fmt::format("cell {} {} {}x{}: region '{}' holds a time that is not "
                                        "finite and non-negative",
                                        cell.key.arm, to_string(cell.key.pass), cell.key.rows,
                                        cell.key.cols, label));
    region_share r;
    r.label = label;
    r.share_pct = region_share_pct(s, times);
    // The kernel clock's time of the region, against the step's kernel time.
    const auto kt = cell.region_kernels_ms.find(label);
    const std::vector<double> *ktimes = kt == cell.region_kernels_ms.end() ? nullptr : &kt->second;
    const std::span<const double> ks = cell.kernel_ms;
    if (ktimes != nullptr) {
      r.kernel = true;
      r.kernel_share_pct = region_share_pct(ks, *ktimes);
    }
    if (!s.empty() && resamples > 0) {
      rng gen(region_seed(cell.key, label));
      std::vector<std::size_t> pick(s.size());
      std::vector<double> shares, kshares;
      shares.reserve(static_cast<std::size_t>(resamples));
      for (std::int64_t b = 0; b < resamples; ++b) {
        for (auto &i : pick)
          i = static_cast<std::size_t>(gen.below(s.size()));
        const double v = region_share_pct(s, times, pick);
        if (std::isfinite(v))
          shares.push_back(v);
        if (ktimes != nullptr) // the same indices: the events' draws do not change
          if (const double k = region_share_pct(ks, *ktimes, pick); std::isfinite(k))
            kshares.push_back(k);
      }
      const double tail = (1.0 - confidence) / 2.0;
      if (!shares.empty()) {
        std::sort(shares.begin(), shares.end());
        r.lo_pct = quantile_sorted(shares, tail);
        r.hi_pct = quantile_sorted(shares, 1.0 - tail);
      }
      if (!kshares.empty()) {
        std::sort(kshares.begin(), kshares.end());
        r.kernel_lo_pct = quantile_sorted(kshares, tail);
        r.kernel_hi_pct = quantile_sorted(kshares, 1.0 - tail);
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

bool is_unstable(double iqr_ms, double median_ms, double ratio) {
  if (std::isnan(iqr_ms) || std::isnan(median_ms))
    return false;
  if (median_ms <= 0.0)
    return iqr_ms > 0.0;
  return iqr_ms / median_ms > ratio;
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
  out.bytes_per_step =
      bytes_per_step(proto.op, proto.type, cell.key.pass, cell.key.rows, cell.key.cols, arm.repeat);
  out.gbps = gbps(out.bytes_per_step, out.statistic_ms);
  out.pct_ceiling = pct_ceiling(out.gbps, instrument.ceiling_gbps);
  out.unstable = is_unstable(out.iqr_ms, out.median_ms, proto.analysis.unstable_iqr_ratio);

  if (!cell.kernel_ms.empty()) {
    if (cell.kernel_ms.size() != s.size() || cell.kernel_counts.size() != s.size())
      throw invalid_input(fmt::format("cell {} {} {}x{} has {} kernel times and {} kernel counts "
                                      "for {} samples",
                                      cell.key.arm, to_string(cell.key.pass), cell.key.rows,
                                      cell.key.cols, cell.kernel_ms.size(),
                                      cell.kernel_counts.size(), s.size()));
    for (const auto &n : cell.kernel_names)
      if (n.samples_ms.size() != s.size())
        throw invalid_input(fmt::format("kernel {} of cell {} has {} times for {} samples", n.name,
                                        cell.key.arm, n.samples_ms.size(), s.size()));
    kernel_statistics k;
    const std::span<const double> km = cell.kernel_ms;
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
    out.kernel = std::move(k);
  }

  const double launch_limit_ms = thresholds::launch_bound_factor * instrument.launch_floor_ms *
                                 static_cast<double>(arm.repeat);
  if (out.kernel) {
    // The kernel clock measures what the floor multiple only estimated (docs/analysis.md).
    if (out.n > 0 && out.kernel->gap_share_pct >= thresholds::launch_gap_share_pct)
      out.bound = bound_kind::launch;
    else if (out.pct_ceiling >= thresholds::bandwidth_bound_pct)
      out.bound = bound_kind::bandwidth;
    else
      out.bound = bound_kind::neither;
  } else if (instrument.launch_floor_ms > 0.0 && out.median_ms < launch_limit_ms) {
    out.bound = bound_kind::launch;
  } else if (out.pct_ceiling >= thresholds::bandwidth_bound_pct) {
    out.bound = bound_kind::bandwidth;
  } else {
    out.bound = bound_kind::neither;
  }

  const correctness_record *check = find_correctness(checks, cell.key);
  if (cell.error)
    out.flags.emplace_back("error");
  if (out.n == 0)
    out.flags.emplace_back("no-samples");
  if (check != nullptr && !check->passed)
    out.flags.emplace_back("correctness-failure");
  if (out.unstable)
    out.flags.emplace_back("unstable");
  if (out.pct_ceiling > thresholds::above_ceiling_pct)
    out.flags.emplace_back("above-ceiling");
  if (instrument.timer_resolution_ms > 0.0 &&
      out.median_ms < thresholds::timer_resolution_factor * instrument.timer_resolution_ms) {
    out.flags.emplace_back("timer-resolution");
  }
  if (out.n >= thresholds::drift_min_samples &&
      std::fabs(out.spearman_rho) > thresholds::drift_abs_rho) {
    out.flags.emplace_back("drift");
  }
  if (instrument.clock_start_mhz > 0.0 && cell.clock_mhz > 0.0 &&
      cell.clock_mhz < thresholds::clock_throttle_ratio * instrument.clock_start_mhz) {
    out.flags.emplace_back("clock-throttle");
  }
  if (cell.harness_bytes_in_window > 0)
    out.flags.emplace_back("harness-allocation");
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
