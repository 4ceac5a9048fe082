// Sample statistics of timing samples: R-7 quantiles, mean, min, the protocol's statistic and
// Spearman's rank correlation with the repetition index (docs/analysis.md).
#pragma once

#include <span>
#include <string_view>

namespace prereg {

/// The statistic a protocol summarises a cell's samples by (docs/protocol.md).
enum class statistic_kind { median, mean, min };

/// The R-7 quantile (numpy's default): sort ascending, h = (n-1)p, lo = floor(h),
/// q = x[lo] + (h-lo)(x[lo+1]-x[lo]) (q = x[lo] when h-lo == 0). NaN for no samples.
/// Throws `error` (exit 2) for a non-finite sample or p outside [0, 1].
[[nodiscard]] double quantile(std::span<const double> samples, double p);
/// The same R-7 quantile of data already sorted ascending, non-empty and finite, p in [0, 1]
/// (no checks): the one implementation of the formula.
[[nodiscard]] double quantile_sorted(std::span<const double> sorted, double p);
/// quantile(samples, 0.5).
[[nodiscard]] double median(std::span<const double> samples);
/// quantile(samples, 0.25).
[[nodiscard]] double q1(std::span<const double> samples);
/// quantile(samples, 0.75).
[[nodiscard]] double q3(std::span<const double> samples);
/// q3 - q1.
[[nodiscard]] double iqr(std::span<const double> samples);
/// Left-to-right sum in the given order, divided by n. NaN for no samples.
[[nodiscard]] double mean(std::span<const double> samples);
/// The smallest sample. NaN for no samples.
[[nodiscard]] double minimum(std::span<const double> samples);
/// The protocol's statistic of `samples` (median, mean or min).
[[nodiscard]] double statistic(std::span<const double> samples, statistic_kind kind);
/// "median" | "mean" | "min".
[[nodiscard]] std::string_view statistic_name(statistic_kind kind);
/// Spearman's rho between the samples and their index 0..n-1, ties given average ranks;
/// 0 for fewer than two samples or a constant series.
[[nodiscard]] double spearman_vs_index(std::span<const double> samples);

} // namespace prereg
