// Step detection over a series of per-run medians (docs/site.md, "Steps"): a penalised
// piecewise-constant fit of the log medians, like asv's, with compare's minimum effect.
#pragma once

#include <cstddef>
#include <vector>

namespace prereg::site {

/// The smallest relative change between two neighbouring levels that counts as a step: the 5%
/// that `prereg compare` calls `same` below (--min-effect's default).
inline constexpr double step_min_effect = 0.05;

/// One step: the level changes from `before` to `after` at point `at` (the first point of the
/// new level). Levels are medians of the points of each segment [ms].
struct step {
  std::size_t at = 0;
  double before = 0;
  double after = 0;
  /// after / before.
  [[nodiscard]] double ratio() const { return after / before; }
};

/// The steps of `values` (positive, in run order): the segmentation of ln(values) minimising
/// the squared error around each segment's mean plus a penalty of 3 sigma^2 ln(n) per segment,
/// sigma the noise estimated from neighbouring differences (median absolute difference /
/// (0.6745 sqrt 2)); then neighbouring segments whose medians differ by less than
/// `min_effect` are joined. Fewer than 3 points, or a non-positive value, gives no steps.
[[nodiscard]] std::vector<step> detect_steps(const std::vector<double> &values,
                                             double min_effect = step_min_effect);

/// The jumps of `values` (medians in run order, `q1`/`q3` their quartiles, as many): each point
/// i >= 1 whose median differs from point i-1's by `min_effect` or more (|v_i / v_(i-1) - 1| >=
/// min_effect) while the two interquartile ranges do not overlap (q1_i > q3_(i-1) or
/// q3_i < q1_(i-1)); `before`/`after` are the two medians. Works from 2 points on, where
/// detect_steps needs 3 and a level; a non-positive or non-finite median is never part of one.
[[nodiscard]] std::vector<step> detect_jumps(const std::vector<double> &values,
                                             const std::vector<double> &q1,
                                             const std::vector<double> &q3,
                                             double min_effect = step_min_effect);

} // namespace prereg::site
