// Numbers on the pages, with fixed rules so that the same report.json always gives the same bytes.
#include "report/render/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace prereg::render {
namespace {

// Renderer 2: the IQR keeps at least one significant digit (0.4 µs is not "(0)").
int iqr_digits(double iqr, int digits) {
  if (!(iqr > 0.0))
    return digits;
  return std::clamp(static_cast<int>(std::ceil(-std::log10(iqr))), digits, 6);
}

} // namespace

std::string three_digits(double v) {
  const double a = std::fabs(v);
  return fmt::format("{:.{}f}", v, a < 10.0 ? 2 : a < 100.0 ? 1 : 0);
}

time_unit unit_for(double ms) {
  const double a = std::fabs(ms);
  if (a < 1e-3)
    return {1e6, "ns"};
  if (a < 1.0)
    return {1e3, "µs"};
  if (a < 1e3)
    return {1.0, "ms"};
  return {1e-3, "s"};
}

std::string time_text(std::optional<double> ms) {
  if (!ms)
    return "—";
  const time_unit u = unit_for(*ms);
  return three_digits(*ms * u.per_ms) + " " + u.name;
}

std::string median_iqr_text(double median_ms, std::optional<double> iqr_ms) {
  const time_unit u = unit_for(median_ms);
  const double m = median_ms * u.per_ms;
  const int digits = std::fabs(m) < 10.0 ? 2 : std::fabs(m) < 100.0 ? 1 : 0;
  if (!iqr_ms)
    return fmt::format("{:.{}f} {}", m, digits, u.name);
  return fmt::format("{:.{}f} ({:.{}f}) {}", m, digits, *iqr_ms * u.per_ms, digits, u.name);
}

std::string median_iqr_in(const time_unit &u, double median_ms, std::optional<double> iqr_ms) {
  const double m = median_ms * u.per_ms;
  const int digits = std::fabs(m) < 10.0 ? 2 : std::fabs(m) < 100.0 ? 1 : 0;
  if (!iqr_ms)
    return fmt::format("{:.{}f} {}", m, digits, u.name);
  const double q = *iqr_ms * u.per_ms;
  return fmt::format("{:.{}f} ({:.{}f}) {}", m, digits, q, iqr_digits(q, digits), u.name);
}

std::string pct_text(double pct) { return fmt::format("{:.1f}%", pct); }

std::string gbps_text(double gbps) { return three_digits(gbps) + " GB/s"; }

std::string mb_text(double bytes) {
  if (bytes == 0.0)
    return "0";
  const double mb = bytes / 1e6;
  return fmt::format("{:.{}f}", mb, mb < 1.0 ? 3 : mb < 100.0 ? 2 : 1);
}

std::string bytes_text(double bytes) {
  static constexpr std::array<const char *, 5> units{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t i = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && i + 1 < units.size()) {
    v /= 1024.0;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.1f} {}", v, units[i]);
}

std::string error_text(std::optional<double> e) {
  return e ? fmt::format("{:.2e}", *e) : std::string("—");
}

std::string p_text(std::optional<double> p) {
  return p ? fmt::format("{:.4f}", *p) : std::string("— (not evaluated)");
}

std::optional<double> finite(double v) {
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::string join(const std::vector<std::string> &items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i ? std::string(sep) : "") + items[i];
  return out;
}

} // namespace prereg::render
