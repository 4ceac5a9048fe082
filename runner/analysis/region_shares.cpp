// Region shares (docs/analysis.md, "Region shares"): each marked region's share of a cell's
// step, and of its kernel time, with a seeded percentile-bootstrap interval.
#include "analysis/cell_stats.hpp"

#include "base/rng.hpp"
#include "base/stats.hpp"
#include "prereg/error.hpp"
#include "spec/records.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace prereg {
namespace {

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
  if (key.named()) // a named shape mixes its label (rows x cols keep their two numbers)
    mix(shape_label(key));
  else {
    mix(std::to_string(key.rows));
    mix(std::to_string(key.cols));
  }
  mix(label);
  return stream_seed(h, stream_id::bootstrap);
}

/// Throws unless every region's kernel times belong to a region and have one finite,
/// non-negative time per sample (as the cell's kernel times do).
void check_region_kernels(const cell_record &cell) {
  const std::size_t samples = cell.samples_ms.size();
  for (const auto &[label, times] : cell.region_kernels_ms) {
    const auto where = fmt::format("cell {}: region '{}'", cell_label(cell.key), label);
    if (!cell.regions_ms.contains(label))
      throw invalid_input(where + " has kernel times but no region times");
    if (times.size() != samples || cell.kernel_ms.size() != samples)
      throw invalid_input(fmt::format("{} has {} kernel times and the cell {} kernel times for {} "
                                      "samples",
                                      where, times.size(), cell.kernel_ms.size(), samples));
    for (const double t : times)
      if (!std::isfinite(t) || t < 0.0)
        throw invalid_input(where + " holds a kernel time that is not finite and non-negative");
  }
}

/// Throws unless the region `label` has one finite, non-negative time per sample.
void check_region_times(const cell_record &cell, const std::string &label,
                        const std::vector<double> &times) {
  if (times.size() != cell.samples_ms.size())
    throw invalid_input(fmt::format("cell {}: region '{}' has {} times for {} samples",
                                    cell_label(cell.key), label, times.size(),
                                    cell.samples_ms.size()));
  for (const double t : times)
    if (!std::isfinite(t) || t < 0.0)
      throw invalid_input(fmt::format("cell {}: region '{}' holds a time that is not "
                                      "finite and non-negative",
                                      cell_label(cell.key), label));
}

/// The [lo, hi] percentile interval of the finite `values` at `confidence` (NaN when none).
std::pair<double, double> interval(std::vector<double> &values, double confidence) {
  const double tail = (1.0 - confidence) / 2.0;
  if (values.empty())
    return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  std::sort(values.begin(), values.end());
  return {quantile_sorted(values, tail), quantile_sorted(values, 1.0 - tail)};
}

/// The bootstrap intervals of `r`'s shares: each resample redraws the sample indices once
/// for the step's share and (with `ktimes`) the kernel share.
void bootstrap_share(const cell_record &cell, const std::vector<double> &times,
                     const std::vector<double> *ktimes, std::int64_t resamples, double confidence,
                     region_share &r) {
  const std::span<const double> s = cell.samples_ms;
  const std::span<const double> ks = cell.kernel_ms;
  rng gen(region_seed(cell.key, r.label));
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
  if (!shares.empty())
    std::tie(r.lo_pct, r.hi_pct) = interval(shares, confidence);
  if (!kshares.empty())
    std::tie(r.kernel_lo_pct, r.kernel_hi_pct) = interval(kshares, confidence);
}

} // namespace

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
  check_region_kernels(cell);
  std::vector<region_share> out;
  for (const auto &[label, times] : cell.regions_ms) {
    check_region_times(cell, label, times);
    region_share r;
    r.label = label;
    r.share_pct = region_share_pct(cell.samples_ms, times);
    // The kernel clock's time of the region, against the step's kernel time.
    const auto kt = cell.region_kernels_ms.find(label);
    const std::vector<double> *ktimes = kt == cell.region_kernels_ms.end() ? nullptr : &kt->second;
    if (ktimes != nullptr) {
      r.kernel = true;
      r.kernel_share_pct = region_share_pct(cell.kernel_ms, *ktimes);
    }
    if (!cell.samples_ms.empty() && resamples > 0)
      bootstrap_share(cell, times, ktimes, resamples, confidence, r);
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace prereg
