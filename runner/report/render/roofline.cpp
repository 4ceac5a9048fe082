// The roofs on the pages (roofline.hpp): ceilings, a results table, and the roofline chart as
// one inline SVG per pass (no script; every text escaped).
#include "report/render/roofline.hpp"

#include "report/render/escape.hpp"
#include "report/render/format.hpp"
#include "report/render/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace prereg::render {
namespace {

using svg_parts::num;

// The plot area, in SVG units (as the other charts).
constexpr double width = 480, left = 66, right = 14, top = 34, plot_h = 240;
constexpr double plot_w = width - left - right;
constexpr double bottom = top + plot_h;

/// "745 TFLOP/s", "12.3 GFLOP/s" below 1 TFLOP/s.
std::string rate_text(double tflops) {
  return tflops >= 1.0 ? three_digits(tflops) + " TFLOP/s"
                       : three_digits(tflops * 1e3) + " GFLOP/s";
}

std::string stream_text(const stream_roof &r) {
  if (!std::isfinite(r.gbps))
    return "not measured";
  double lo = INFINITY, hi = -INFINITY;
  for (const double ms : r.samples_ms) {
    const double g = static_cast<double>(r.bytes) / (ms * 1e-3) / 1e9;
    lo = std::min(lo, g), hi = std::max(hi, g);
  }
  return fmt::format("{} (median of {} windows of {}, range {} to {}; {})", gbps_text(r.gbps),
                     r.samples_ms.size(), bytes_text(static_cast<double>(r.bytes)),
                     three_digits(lo), three_digits(hi), r.method);
}

std::string compute_text(const compute_roof &c) {
  if (!c.unknown.empty())
    return "unknown: " + c.unknown;
  if (!std::isfinite(c.tflops))
    return "not measured";
  return fmt::format("{} (median of {} calls of {}; {})", rate_text(c.tflops), c.samples_ms.size(),
                     c.shape, c.method);
}

/// One plotted cell.
struct roof_point {
  double intensity = 0;
  double tflops = 0;
  bool hollow = false;
  std::string title;
};

/// The cells of one arm at one pass with a finite intensity and rate, and how many were left
/// out as excluded from verdicts (renderer 4's rule).
std::vector<roof_point> arm_points(const view &v, const std::string &arm, const std::string &pass,
                                   std::size_t &excluded) {
  std::vector<roof_point> out;
  for (const auto cols : v.cols)
    for (const auto rows : v.rows) {
      const report_cell *c = find_cell(v, arm, pass, rows, cols);
      if (c == nullptr || !c->roofline || !std::isfinite(c->roofline->intensity) ||
          !(c->roofline->tflops > 0.0) || !(c->roofline->intensity > 0.0))
        continue;
      if (v.renderer >= 4 && excluded_reason(v, *c) != nullptr) {
        ++excluded;
        continue;
      }
      const report_roofline &r = *c->roofline;
      std::string title = fmt::format("{} · {} {} · {} · intensity {:.3g} FLOP/byte", arm, pass,
                                      key_shape_text(c->key), rate_text(r.tflops), r.intensity);
      if (const auto p = finite(r.pct_compute))
        title += fmt::format(" · {} of the {} ceiling", pct_text(*p), r.compute.value_or("?"));
      if (const auto p = finite(r.pct_roof))
        title += fmt::format(" · {} of its {} roof", pct_text(*p), gbps_text(r.roof_gbps));
      title += " · bound " + std::string(to_string(c->bound));
      out.push_back({r.intensity, r.tflops, has_flag(*c, "unstable"), std::move(title)});
    }
  return out;
}

/// A roof to draw: the bandwidth ones slanted (TFLOP/s = intensity x GB/s / 1000), the
/// compute ones flat.
struct roof_line {
  std::string label;
  double gbps = 0;   ///< > 0: a bandwidth roof
  double tflops = 0; ///< > 0: a compute roof
  bool dashed = false;
};

std::vector<roof_line> roof_lines(const view &v, const std::string &pass) {
  const report_instrument &in = v.report->instrument;
  std::vector<roof_line> out;
  if (in.roofs && std::isfinite(in.roofs->read.gbps))
    out.push_back({"read " + gbps_text(in.roofs->read.gbps), in.roofs->read.gbps, 0, false});
  if (std::isfinite(in.ceiling_gbps) && in.ceiling_gbps > 0)
    out.push_back({"copy " + gbps_text(in.ceiling_gbps), in.ceiling_gbps, 0, true});
  std::vector<std::string> types;
  for (const auto &[key, c] : v.cells)
    if (std::get<1>(key) == pass && c->roofline && c->roofline->compute &&
        std::find(types.begin(), types.end(), *c->roofline->compute) == types.end())
      types.push_back(*c->roofline->compute);
  std::sort(types.begin(), types.end());
  for (const auto &t : types)
    if (in.roofs)
      if (const auto it = in.roofs->compute.find(t);
          it != in.roofs->compute.end() && std::isfinite(it->second.tflops))
        out.push_back({t + " " + rate_text(it->second.tflops), 0, it->second.tflops, false});
  return out;
}

/// A log scale over [10^lo, 10^hi] onto [a, b] (b < a for the y axis).
struct log_scale {
  double lo = 0, hi = 1, a = 0, b = 1;
  [[nodiscard]] double operator()(double v) const {
    return a + (std::log10(v) - lo) / (hi - lo) * (b - a);
  }
};

/// Decades around every value, at least one decade wide, padded.
log_scale scale_of(const std::vector<double> &values, double a, double b) {
  double lo = std::log10(*std::min_element(values.begin(), values.end()));
  double hi = std::log10(*std::max_element(values.begin(), values.end()));
  const double pad = std::max(0.1 * (hi - lo), 0.25);
  lo -= pad, hi += pad;
  if (hi - lo < 1.0) {
    const double mid = (hi + lo) / 2;
    lo = mid - 0.5, hi = mid + 0.5;
  }
  return {lo, hi, a, b};
}

std::string axes_and_grid(const log_scale &px, const log_scale &py) {
  std::string out = "<g class=\"grid\">";
  for (const double t : svg_parts::log_ticks(py.lo, py.hi))
    out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", num(left),
                       num(left + plot_w), num(py(t)), num(py(t)));
  for (const double t : svg_parts::log_ticks(px.lo, px.hi))
    out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", num(px(t)), num(px(t)),
                       num(top), num(bottom));
  out += "</g>\n<g class=\"axis\">";
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\"/>",
                     num(left), num(top), num(plot_w), num(plot_h));
  for (const double t : svg_parts::log_ticks(py.lo, py.hi))
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:g}</text>", num(left - 5),
                       num(py(t) + 4), t);
  for (const double t : svg_parts::log_ticks(px.lo, px.hi))
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>", num(px(t)),
                       num(bottom + 15), t);
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"alabel\">arithmetic "
                     "intensity [FLOP/byte of the bytes model] (log scale)</text>",
                     num(left + plot_w / 2), num(bottom + 33));
  out += fmt::format("<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\" "
                     "class=\"alabel\">TFLOP/s (log scale)</text>",
                     num(top + plot_h / 2));
  return out + "</g>\n";
}

/// The roofs: each bandwidth roof up to the highest compute roof, each compute roof from the
/// read roof's ridge on; labels at their right ends.
std::string roofs_svg(const std::vector<roof_line> &lines, const log_scale &px,
                      const log_scale &py) {
  double cap = 0, first_gbps = 0;
  for (const auto &l : lines) {
    cap = std::max(cap, l.tflops);
    if (l.gbps > 0 && first_gbps == 0)
      first_gbps = l.gbps;
  }
  const double x_lo = std::pow(10.0, px.lo), x_hi = std::pow(10.0, px.hi);
  const double y_lo = std::pow(10.0, py.lo), y_hi = std::pow(10.0, py.hi);
  std::string out = "<g class=\"roofs\">";
  int bandwidth = 0;
  for (const auto &l : lines) {
    double x0 = x_lo, x1 = x_hi, y0 = 0, y1 = 0;
    if (l.gbps > 0) { // TFLOP/s = FLOP/byte x GB/s / 1000
      x0 = std::max(x_lo, y_lo * 1e3 / l.gbps);
      x1 = std::min(x_hi, (cap > 0 ? std::min(cap, y_hi) : y_hi) * 1e3 / l.gbps);
      y0 = x0 * l.gbps / 1e3, y1 = x1 * l.gbps / 1e3;
    } else {
      if (first_gbps > 0)
        x0 = std::clamp(l.tflops * 1e3 / first_gbps, x_lo, x_hi);
      y0 = y1 = std::clamp(l.tflops, y_lo, y_hi);
    }
    if (!(x1 > x0))
      continue;
    out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#444\" "
                       "stroke-width=\"1.5\"{}/>",
                       num(px(x0)), num(px(x1)), num(py(y0)), num(py(y1)),
                       l.dashed ? " stroke-dasharray=\"5 4\"" : "");
    if (l.gbps > 0) { // a bandwidth roof: labelled mid-line (in log x), the first above it
      const double xm = std::sqrt(x0 * x1);
      out +=
          fmt::format("<text x=\"{}\" y=\"{}\" class=\"rooflabel\">{}</text>", num(px(xm)),
                      num(py(xm * l.gbps / 1e3) + (bandwidth++ == 0 ? -6.0 : 14.0)), html(l.label));
    } else // a compute roof: at its right end, above it
      out +=
          fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"rooflabel\">{}</text>",
                      num(left + plot_w - 4), num(py(y1) - 4), html(l.label));
  }
  return out + "</g>\n";
}

std::string series_svg(std::size_t i, const std::string &arm, const std::vector<roof_point> &pts,
                       const log_scale &px, const log_scale &py) {
  std::string out = fmt::format("<g class=\"series\" data-arm=\"{}\" stroke=\"{}\">", html(arm),
                                svg_parts::colour(i));
  for (const auto &p : pts)
    out += "<g class=\"pt" + std::string(p.hollow ? " unstable" : "") + "\"><title>" +
           html(p.title) + "</title>" +
           svg_parts::marker(i, px(p.intensity), py(p.tflops), svg_parts::colour(i), p.hollow) +
           "</g>";
  return out + "</g>\n";
}

std::string legend_svg(const std::vector<std::string> &notes, double y0) {
  std::string out = "<g class=\"legend\">";
  for (std::size_t i = 0; i < notes.size(); ++i) {
    const double y = y0 + 18.0 * static_cast<double>(i);
    out += svg_parts::marker(i, left + 12, y, svg_parts::colour(i), false);
    out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>", num(left + 30), num(y + 4),
                       html(notes[i]));
  }
  return out + "</g>\n";
}

std::string roofline_chart(const view &v, const std::string &pass) {
  std::vector<std::vector<roof_point>> points;
  std::vector<std::string> notes;
  std::vector<double> xs, ys;
  for (const auto &arm : v.arms) {
    std::size_t excluded = 0;
    points.push_back(arm_points(v, arm, pass, excluded));
    notes.push_back(arm + (points.back().empty() && excluded == 0 ? " (no data)" : "") +
                    (excluded > 0 ? fmt::format(" (excluded from verdicts at {} shape(s): not "
                                                "drawn)",
                                                excluded)
                                  : ""));
    for (const auto &p : points.back())
      xs.push_back(p.intensity), ys.push_back(p.tflops);
  }
  const std::vector<roof_line> lines = roof_lines(v, pass);
  if (xs.empty())
    return "";
  double read_gbps = 0; // the first bandwidth roof: the read ceiling's
  for (const auto &l : lines)
    if (l.gbps > 0 && read_gbps == 0)
      read_gbps = l.gbps;
  for (const auto &l : lines)
    if (l.tflops > 0) { // the compute roof, and its ridge with the read roof, in view
      ys.push_back(l.tflops);
      if (read_gbps > 0)
        xs.push_back(l.tflops * 1e3 / read_gbps);
    }
  const log_scale px = scale_of(xs, left, left + plot_w);
  const log_scale py = scale_of(ys, bottom, top);
  const double height = bottom + 50 + 18.0 * static_cast<double>(notes.size()) + 4;
  const std::string id = fmt::format("roofline-{}", pass == "fwd" ? "fwd" : "fwdbwd");
  const std::string title = "Roofline · " + pass;
  std::string out = fmt::format(
      "<svg class=\"chart\" id=\"{}\" data-kind=\"roofline\" data-pass=\"{}\" data-cols=\"0\" "
      "data-arms=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-labelledby=\"{}-t\">\n<title id=\"{}-t\">{}</title>\n<text class=\"ctitle\" x=\"{}\" "
      "y=\"18\">{}</text>\n",
      html(id), html(pass), v.arms.size(), num(width), num(height), num(width), num(height),
      html(id), html(id), html(title), num(left), html(title));
  out += axes_and_grid(px, py);
  out += roofs_svg(lines, px, py);
  for (std::size_t i = 0; i < v.arms.size(); ++i)
    out += series_svg(i, v.arms[i], points[i], px, py);
  return out + legend_svg(notes, bottom + 50) + "</svg>";
}

} // namespace

bool has_roofs(const view &v) { return v.report->instrument.roofs.has_value(); }

void add_roof_rows(table &t, const report_instrument &in) {
  if (!in.roofs)
    return;
  t.rows.push_back({plain("read ceiling"), plain(stream_text(in.roofs->read))});
  t.rows.push_back({plain("write ceiling"), plain(stream_text(in.roofs->write))});
  for (const auto &[type, c] : in.roofs->compute)
    t.rows.push_back({plain("compute ceiling " + type), plain(compute_text(c))});
}

span roof_cell(const report_cell &c) {
  if (!c.roofline)
    return plain("—");
  const report_roofline &r = *c.roofline;
  std::string out = "—";
  if (const auto p = finite(r.pct_roof))
    out = pct_text(*p) + " of " + gbps_text(r.roof_gbps);
  if (const auto t = finite(r.tflops)) {
    out += "; " + rate_text(*t);
    if (const auto p = finite(r.pct_compute))
      out += " (" + pct_text(*p) + ")";
  }
  return plain(out);
}

std::string roofline_html(const view &v) {
  if (!has_roofs(v))
    return "";
  std::string charts;
  for (const auto &pass : v.passes)
    if (std::string svg = roofline_chart(v, pass); !svg.empty())
      charts += "<figure>" + svg + "</figure>\n";
  if (charts.empty())
    return "";
  return "<section id=\"roofline\">\n<h2>Roofline</h2>\n<div class=\"charts\">\n" + charts +
         "</div>\n<p class=\"caption\">Each marker is a cell at its arithmetic intensity (its "
         "FLOPs over its bytes model) and its rate; log scales. The slanted lines are the read "
         "ceiling (solid) and the copy ceiling (dashed) as bandwidth roofs, the flat ones the "
         "compute ceilings of the cells' element types. A cell's own bandwidth roof is that of "
         "its read/write mix, between the write or copy roof and the read roof: hover a marker "
         "for it, its share of it and of the compute ceiling, and its bound.</p>\n</section>\n";
}

} // namespace prereg::render
