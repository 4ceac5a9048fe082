// The device-state section of the pages (device_state.hpp): a table and, in HTML, a strip per
// cell drawn as inline SVG (no script).
#include "report/render/device_state.hpp"

#include "base/stats.hpp"
#include "report/render/escape.hpp"
#include "report/render/format.hpp"
#include "report/render/table.hpp"
#include "spec/device_state.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace prereg::render {
namespace {

/// The finite values of one quantity over a cell's samples.
std::vector<double> finite_of(const report_cell &c, double device_state_sample::*m) {
  std::vector<double> out;
  for (const auto &s : c.states)
    if (std::isfinite(s.*m))
      out.push_back(s.*m);
  return out;
}

/// "MIN–MAX UNIT" (one value when equal), "unknown" when none.
std::string range_text(const std::vector<double> &v, const char *unit) {
  if (v.empty())
    return "unknown";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  if (*lo == *hi)
    return fmt::format("{:g} {}", *lo, unit);
  return fmt::format("{:g}–{:g} {}", *lo, *hi, unit);
}

std::vector<std::size_t> throttled_samples(const report_cell &c) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < c.states.size(); ++i)
    if (c.states[i].reasons && (*c.states[i].reasons & throttle_reason_mask) != 0)
      out.push_back(i);
  return out;
}

std::string stop_text(const report_cell &c) {
  if (!c.stop)
    return "fixed repetitions";
  const stop_record &s = *c.stop;
  std::string t = s.reason;
  if (std::isfinite(s.rel_ci))
    t += fmt::format(" (±{:.2f}% at n = {})", 100.0 * s.rel_ci, c.samples_ms.size());
  return t + fmt::format(", {:.2f} s", s.seconds);
}

std::string throttle_text(const report_cell &c) {
  if (c.states.empty())
    return "unknown";
  const auto t = throttled_samples(c);
  if (t.empty())
    return "none";
  std::uint64_t seen = 0;
  for (const std::size_t i : t)
    seen |= *c.states[i].reasons & throttle_reason_mask;
  return fmt::format("{} of {} ({})", t.size(), c.states.size(), throttle_reason_names(seen));
}

table state_table(const report_document &r) {
  table t{{plain("cell"), plain("samples"), plain("stopped"), plain("SM clock"),
           plain("memory clock"), plain("power"), plain("temperature"), plain("throttled")},
          {false, true, false, false, false, false, false, false},
          {},
          true,
          "state"};
  for (const auto &c : r.cells) {
    if (c.states.empty() && !c.stop)
      continue;
    t.rows.push_back({code(cell_label(c.key)), plain(std::to_string(c.samples_ms.size())),
                      plain(stop_text(c)),
                      plain(range_text(finite_of(c, &device_state_sample::sm_mhz), "MHz")),
                      plain(range_text(finite_of(c, &device_state_sample::mem_mhz), "MHz")),
                      plain(range_text(finite_of(c, &device_state_sample::power_w), "W")),
                      plain(range_text(finite_of(c, &device_state_sample::temp_c), "°C")),
                      plain(throttle_text(c))});
  }
  return t;
}

constexpr double strip_w = 480, top_h = 60, strip_h = 36, pad = 4;

/// x of sample i of n in the strip.
double x_of(std::size_t i, std::size_t n) {
  return pad + (n <= 1 ? 0.0 : (strip_w - 2 * pad) * static_cast<double>(i) / (n - 1.0));
}

/// y of v in [lo, hi] inside a band [y0, y0 + h] (top = hi).
double y_of(double v, double lo, double hi, double y0, double h) {
  const double f = hi > lo ? (v - lo) / (hi - lo) : 0.5;
  return y0 + h - pad - f * (h - 2 * pad);
}

/// A polyline of one quantity (its finite values) over the samples in band [y0, y0 + h].
std::string line_of(const report_cell &c, double device_state_sample::*m, double y0, double h,
                    const char *cls, const char *colour) {
  const auto v = finite_of(c, m);
  if (v.empty())
    return "";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::string pts;
  for (std::size_t i = 0; i < c.states.size(); ++i)
    if (std::isfinite(c.states[i].*m))
      pts += fmt::format("{:.1f},{:.1f} ", x_of(i, c.states.size()),
                         y_of(c.states[i].*m, *lo, *hi, y0, h));
  return fmt::format("<polyline class=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.2\" "
                     "points=\"{}\"/>",
                     cls, colour, pts);
}

/// The top of the samples' axis: the largest sample, or q3 + 3 IQR when a sample lies beyond
/// it (far-out samples are drawn hollow at the top, so that one outlier does not flatten the
/// rest).
double plot_top(const std::vector<double> &s) {
  const double top = *std::max_element(s.begin(), s.end());
  if (s.size() < 4)
    return top;
  const double fence = q3(s) + 3.0 * iqr(s);
  return fence > 0 && fence < top ? fence : top;
}

/// One cell's strip: its samples (dots; throttled ones red) above, the SM clock and the power
/// under them, each scaled to its own range (given in the caption).
std::string strip(const report_cell &c) {
  const std::size_t n = c.samples_ms.size();
  if (n == 0)
    return "";
  const double lo = *std::min_element(c.samples_ms.begin(), c.samples_ms.end());
  const double hi = plot_top(c.samples_ms);
  const auto bad = throttled_samples(c);
  std::string svg = fmt::format("<svg class=\"strip\" width=\"{:g}\" height=\"{:g}\" "
                                "role=\"img\" xmlns=\"http://www.w3.org/2000/svg\">",
                                strip_w, top_h + strip_h);
  for (std::size_t i = 0; i < n; ++i) {
    const bool red = std::find(bad.begin(), bad.end(), i) != bad.end();
    const bool above = c.samples_ms[i] > hi; // drawn hollow at the top
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"1.6\" fill=\"{}\" stroke=\"{}\"><title>sample "
        "{}: {}</title></circle>",
        x_of(i, n), y_of(std::min(c.samples_ms[i], hi), lo, hi, 0, top_h),
        above ? "none"
        : red ? "#c0392b"
              : "#2c3e50",
        red ? "#c0392b" : "#2c3e50", i, html(time_text(c.samples_ms[i])));
  }
  svg += fmt::format("<line x1=\"0\" x2=\"{:g}\" y1=\"{:g}\" y2=\"{:g}\" stroke=\"#ccc\"/>",
                     strip_w, top_h, top_h);
  svg += line_of(c, &device_state_sample::sm_mhz, top_h, strip_h, "sm", "#2980b9");
  svg += line_of(c, &device_state_sample::power_w, top_h, strip_h, "power", "#e67e22");
  return svg + "</svg>";
}

} // namespace

bool has_device_state(const report_document &r) {
  return std::any_of(r.cells.begin(), r.cells.end(),
                     [](const report_cell &c) { return !c.states.empty() || c.stop; });
}

std::string device_state_markdown(const report_document &r) {
  if (!has_device_state(r))
    return "";
  return "## Device state and stopping\n\nPer cell: why its samples stopped (the stopping "
         "rule's reason and the precision it reached: the bootstrap interval of the median, "
         "half-width over the median), and the device's clocks, power and temperature read "
         "after each sample's window (range over the samples), with the samples the device "
         "throttled.\n\n" +
         to_markdown(state_table(r)) + "\n";
}

std::string device_state_html(const report_document &r) {
  if (!has_device_state(r))
    return "";
  std::string out = "<section id=\"device-state\">\n<h2>Device state and stopping</h2>\n<p>Per "
                    "cell: why its samples stopped and the precision reached, and the device's "
                    "clocks, power and temperature read after each sample's window.</p>\n" +
                    to_html(state_table(r));
  for (const auto &c : r.cells) {
    if (c.states.empty())
      continue;
    out += "<figure class=\"strip\">" + strip(c) + "<figcaption><code>" + html(cell_label(c.key)) +
           "</code>: samples (red: throttled; hollow at the top: beyond q3 + 3 IQR) " +
           html(range_text(c.samples_ms, "ms")) + "; under them SM clock (blue, " +
           html(range_text(finite_of(c, &device_state_sample::sm_mhz), "MHz")) +
           ") and power (orange, " +
           html(range_text(finite_of(c, &device_state_sample::power_w), "W")) +
           "), each on its own scale</figcaption></figure>\n";
  }
  return out + "</section>\n";
}

} // namespace prereg::render
