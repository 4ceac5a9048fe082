// The stopping rule's precision check and its replay (stop_rule.hpp).
#include "spec/stop_rule.hpp"

#include "base/rng.hpp"
#include "base/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace prereg {
namespace {

std::uint64_t fnv1a64(const std::string &s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

/// Whether two numbers are the same (NaN equal to NaN).
bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

} // namespace

std::uint64_t stop_seed(std::uint64_t plan_seed, const cell_key &k) {
  return stream_seed(plan_seed, stream_id::bootstrap) ^ fnv1a64(cell_label(k));
}

stop_precision stop_check(std::span<const double> samples, double confidence, std::uint64_t seed) {
  const std::size_t n = samples.size();
  stop_precision p;
  p.median_ms = median(samples);
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  // A resample is n ranks of the sorted samples; its R-7 median is read off the ranks' counts
  // (the same value sorting the resample would give, in O(n)).
  const std::size_t lo = (n - 1) / 2;
  const double frac = 0.5 * static_cast<double>(n - 1) - static_cast<double>(lo);
  rng draw(seed ^ (static_cast<std::uint64_t>(n) * 0x9e3779b97f4a7c15ULL));
  std::vector<double> medians(static_cast<std::size_t>(stop_resamples));
  std::vector<std::uint32_t> counts(n);
  for (auto &m : medians) {
    std::fill(counts.begin(), counts.end(), 0U);
    for (std::size_t j = 0; j < n; ++j)
      ++counts[draw.below(n)];
    std::size_t rank = 0, seen = counts[0];
    while (seen <= lo)
      seen += counts[++rank];
    const double a = sorted[rank];
    while (frac > 0 && seen <= lo + 1)
      seen += counts[++rank];
    m = frac > 0 ? a + frac * (sorted[rank] - a) : a;
  }
  std::sort(medians.begin(), medians.end());
  const double tail = (1.0 - confidence) / 2.0;
  p.lo_ms = quantile_sorted(medians, tail);
  p.hi_ms = quantile_sorted(medians, 1.0 - tail);
  const double half = std::max(p.median_ms - p.lo_ms, p.hi_ms - p.median_ms);
  p.rel_ci = p.median_ms > 0 ? half / p.median_ms : std::numeric_limits<double>::quiet_NaN();
  return p;
}

bool precise_enough(const stop_spec &rule, const stop_precision &p, std::size_t n) {
  return n >= 2 && n >= static_cast<std::size_t>(rule.min) && p.rel_ci <= rule.rel_ci;
}

std::string stop_replay_problem(const stop_spec &rule, double confidence, std::uint64_t seed,
                                std::span<const double> samples, const stop_record &rec,
                                bool failed) {
  const std::size_t n = samples.size();
  if (failed) // its error explains its count (a failure after the last sample keeps the reason)
    return n > static_cast<std::size_t>(rule.max)
               ? fmt::format("has {} samples, more than stop.max {}", n, rule.max)
               : "";
  if (rec.reason == "error")
    return "stopped for an error, but the cell has none";
  if (n > static_cast<std::size_t>(rule.max))
    return fmt::format("has {} samples, more than stop.max {}", n, rule.max);
  if (n < static_cast<std::size_t>(rule.min))
    return fmt::format("has {} samples, fewer than stop.min {}", n, rule.min);
  // The rule stops at the first count at which it holds: no earlier count may satisfy it.
  for (std::size_t k = std::max<std::size_t>(2, static_cast<std::size_t>(rule.min)); k < n; ++k)
    if (precise_enough(rule, stop_check(samples.first(k), confidence, seed), k))
      return fmt::format("has {} samples, but the rule was met after {}", n, k);
  const stop_precision last = n >= 2 ? stop_check(samples, confidence, seed) : stop_precision{};
  const bool met = n >= 2 && precise_enough(rule, last, n);
  if (rec.reason == "precision" && !met)
    return fmt::format("stopped for precision at {} samples, but the interval is {:g} of the "
                       "median, above rel_ci {:g}",
                       n, last.rel_ci, rule.rel_ci);
  if (rec.reason == "max" && (met || n != static_cast<std::size_t>(rule.max)))
    return met ? fmt::format("stopped at max, but the rule was met at {} samples", n)
               : fmt::format("stopped at max with {} samples, not stop.max {}", n, rule.max);
  if (rec.reason == "max_seconds" && (met || rec.seconds < rule.max_seconds))
    return met ? fmt::format("stopped at max_seconds, but the rule was met at {} samples", n)
               : fmt::format("stopped at max_seconds after {:g} s, below {:g}", rec.seconds,
                             rule.max_seconds);
  if (rec.reason != "precision" && rec.reason != "max" && rec.reason != "max_seconds")
    return fmt::format("has the unknown stop reason '{}'", rec.reason);
  if (n >= 2 && !(same(rec.rel_ci, last.rel_ci) && same(rec.ci_lo_ms, last.lo_ms) &&
                  same(rec.ci_hi_ms, last.hi_ms)))
    return fmt::format("records the interval [{:g}, {:g}] ms (rel_ci {:g}), the replay gives "
                       "[{:g}, {:g}] ms (rel_ci {:g})",
                       rec.ci_lo_ms, rec.ci_hi_ms, rec.rel_ci, last.lo_ms, last.hi_ms, last.rel_ci);
  return "";
}

} // namespace prereg
