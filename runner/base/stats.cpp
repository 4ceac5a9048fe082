// Sample statistics: every formula here is part of what `prereg audit` re-implements.
#include "base/stats.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace prereg {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

void require_finite(std::span<const double> samples) {
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i])) {
      throw invalid_input(fmt::format("sample {} is not a finite number", i));
    }
  }
}

} // namespace

double quantile(std::span<const double> samples, double p) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw invalid_input(fmt::format("quantile probability {} outside [0, 1]", p));
  }
  require_finite(samples);
  if (samples.empty())
    return nan;
  std::vector<double> x(samples.begin(), samples.end());
  std::sort(x.begin(), x.end());
  return quantile_sorted(x, p);
}

double quantile_sorted(std::span<const double> x, double p) {
  const double h = static_cast<double>(x.size() - 1) * p;
  const double lo_d = std::floor(h);
  const auto lo = static_cast<std::size_t>(lo_d);
  const double frac = h - lo_d;
  if (frac == 0.0 || lo + 1 >= x.size())
    return x[lo];
  return x[lo] + frac * (x[lo + 1] - x[lo]);
}

double median(std::span<const double> samples) { return quantile(samples, 0.5); }
double q1(std::span<const double> samples) { return quantile(samples, 0.25); }
double q3(std::span<const double> samples) { return quantile(samples, 0.75); }
double iqr(std::span<const double> samples) { return q3(samples) - q1(samples); }

double mean(std::span<const double> samples) {
  require_finite(samples);
  if (samples.empty())
    return nan;
  double sum = 0.0;
  for (const double v : samples)
    sum += v;
  return sum / static_cast<double>(samples.size());
}

double minimum(std::span<const double> samples) {
  require_finite(samples);
  if (samples.empty())
    return nan;
  return *std::min_element(samples.begin(), samples.end());
}

double statistic(std::span<const double> samples, statistic_kind kind) {
  switch (kind) {
  case statistic_kind::median:
    return median(samples);
  case statistic_kind::mean:
    return mean(samples);
  case statistic_kind::min:
    return minimum(samples);
  }
  throw io_error("unknown statistic kind");
}

std::string_view statistic_name(statistic_kind kind) {
  switch (kind) {
  case statistic_kind::median:
    return "median";
  case statistic_kind::mean:
    return "mean";
  case statistic_kind::min:
    return "min";
  }
  return "?";
}

double spearman_vs_index(std::span<const double> samples) {
  require_finite(samples);
  const std::size_t n = samples.size();
  if (n < 2)
    return 0.0;
  // Average 1-based ranks: every rank is a multiple of 0.5, so the sums below are exact.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return samples[a] < samples[b]; });
  std::vector<double> rank(n);
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j + 1 < n && samples[order[j + 1]] == samples[order[i]])
      ++j;
    const double avg = (static_cast<double>(i + 1) + static_cast<double>(j + 1)) / 2.0;
    for (std::size_t k = i; k <= j; ++k)
      rank[order[k]] = avg;
    i = j + 1;
  }
  const double m = (static_cast<double>(n) + 1.0) / 2.0;
  double cov = 0.0;
  double var_x = 0.0;
  double var_i = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = rank[i] - m;
    const double di = static_cast<double>(i + 1) - m;
    cov += dx * di;
    var_x += dx * dx;
    var_i += di * di;
  }
  if (var_x == 0.0)
    return 0.0;
  return cov / std::sqrt(var_x * var_i);
}

} // namespace prereg
