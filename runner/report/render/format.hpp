// Numbers on the pages, with fixed rules so that the same report.json always gives the same bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prereg::render {

/// Three significant digits in a fixed-point form: 1.23, 12.3, 123.
[[nodiscard]] std::string three_digits(double v);

/// A time unit: `per_ms` of it in one millisecond.
struct time_unit {
  double per_ms;
  const char *name;
};

/// The unit a time of `ms` milliseconds is shown in: ns, µs, ms or s.
[[nodiscard]] time_unit unit_for(double ms);

/// A time in its own unit, three digits ("—" for none).
[[nodiscard]] std::string time_text(std::optional<double> ms);

/// "median (IQR) unit", both in the median's unit and precision.
[[nodiscard]] std::string median_iqr_text(double median_ms, std::optional<double> iqr_ms);

/// Renderer 2: "median (IQR) unit" in a given unit (one per table row, so µs and ms never mix
/// in a row), the IQR with at least one significant digit.
[[nodiscard]] std::string median_iqr_in(const time_unit &u, double median_ms,
                                        std::optional<double> iqr_ms);

/// A percentage with one decimal: "12.3%".
[[nodiscard]] std::string pct_text(double pct);

/// A bandwidth: "123 GB/s".
[[nodiscard]] std::string gbps_text(double gbps);

/// Decimal megabytes (10^6 bytes), as the contract's "peak MB".
[[nodiscard]] std::string mb_text(double bytes);

/// Binary sizes for hardware facts: 50.0 MiB.
[[nodiscard]] std::string bytes_text(double bytes);

/// An error magnitude in scientific notation ("—" for none).
[[nodiscard]] std::string error_text(std::optional<double> e);

/// A probability with four decimals ("— (not evaluated)" for none).
[[nodiscard]] std::string p_text(std::optional<double> p);

/// A finite number, or nullopt (the model's NaN for null).
[[nodiscard]] std::optional<double> finite(double v);

/// `items` joined by `sep`.
[[nodiscard]] std::string join(const std::vector<std::string> &items, std::string_view sep);

} // namespace prereg::render
