// Step detection: optimal partition of the log medians (dynamic programming over prefix sums),
// then neighbouring levels closer than the minimum effect joined.
#include "site/steps.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace prereg::site {
namespace {

/// The median of values[begin, end).
double median_of(const std::vector<double> &values, std::size_t begin, std::size_t end) {
  std::vector<double> v(values.begin() + static_cast<std::ptrdiff_t>(begin),
                        values.begin() + static_cast<std::ptrdiff_t>(end));
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// The noise of `y` from neighbouring differences, at least 0.005 (half a percent).
double noise_sigma(const std::vector<double> &y) {
  std::vector<double> d;
  for (std::size_t i = 1; i < y.size(); ++i)
    d.push_back(std::abs(y[i] - y[i - 1]));
  const double mad = median_of(d, 0, d.size());
  return std::max(mad / (0.6745 * std::sqrt(2.0)), 0.005);
}

/// Segment starts of the penalised least-squares partition of `y`.
std::vector<std::size_t> partition(const std::vector<double> &y, double penalty) {
  const std::size_t n = y.size();
  std::vector<double> s1(n + 1, 0), s2(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    s1[i + 1] = s1[i] + y[i];
    s2[i + 1] = s2[i] + y[i] * y[i];
  }
  std::vector<double> best(n + 1, std::numeric_limits<double>::infinity());
  std::vector<std::size_t> from(n + 1, 0);
  best[0] = 0;
  for (std::size_t j = 1; j <= n; ++j)
    for (std::size_t i = 0; i < j; ++i) {
      const double sum = s1[j] - s1[i];
      const double cost = (s2[j] - s2[i]) - sum * sum / static_cast<double>(j - i);
      const double total = best[i] + std::max(cost, 0.0) + penalty;
      if (total < best[j]) {
        best[j] = total;
        from[j] = i;
      }
    }
  std::vector<std::size_t> starts;
  for (std::size_t j = n; j > 0; j = from[j])
    starts.push_back(from[j]);
  std::reverse(starts.begin(), starts.end());
  return starts;
}

} // namespace

std::vector<step> detect_steps(const std::vector<double> &values, double min_effect) {
  const std::size_t n = values.size();
  if (n < 3 || std::any_of(values.begin(), values.end(),
                           [](double v) { return !(v > 0) || !std::isfinite(v); }))
    return {};
  std::vector<double> y(n);
  std::transform(values.begin(), values.end(), y.begin(), [](double v) { return std::log(v); });
  const double sigma = noise_sigma(y);
  std::vector<std::size_t> starts =
      partition(y, 3.0 * sigma * sigma * std::log(static_cast<double>(n)));
  starts.push_back(n);
  // Join the closest pair of neighbouring levels while any pair is closer than min_effect.
  for (;;) {
    std::size_t join = 0;
    double closest = std::numeric_limits<double>::infinity();
    for (std::size_t k = 1; k + 1 < starts.size(); ++k) {
      const double a = median_of(values, starts[k - 1], starts[k]);
      const double b = median_of(values, starts[k], starts[k + 1]);
      const double effect = std::abs(b / a - 1.0);
      if (effect < min_effect && effect < closest) {
        closest = effect;
        join = k;
      }
    }
    if (join == 0)
      break;
    starts.erase(starts.begin() + static_cast<std::ptrdiff_t>(join));
  }
  std::vector<step> steps;
  for (std::size_t k = 1; k + 1 < starts.size(); ++k)
    steps.push_back({starts[k], median_of(values, starts[k - 1], starts[k]),
                     median_of(values, starts[k], starts[k + 1])});
  return steps;
}

std::vector<step> detect_jumps(const std::vector<double> &values, const std::vector<double> &q1,
                               const std::vector<double> &q3, double min_effect) {
  std::vector<step> jumps;
  const auto usable = [](double v) { return v > 0 && std::isfinite(v); };
  if (q1.size() != values.size() || q3.size() != values.size())
    return jumps;
  for (std::size_t i = 1; i < values.size(); ++i) {
    const double a = values[i - 1], b = values[i];
    if (!usable(a) || !usable(b) || std::abs(b / a - 1.0) < min_effect)
      continue;
    if (q1[i] > q3[i - 1] || q3[i] < q1[i - 1])
      jumps.push_back({i, a, b});
  }
  return jumps;
}

} // namespace prereg::site
