// A chart drawn as one inline SVG element: axes, grid, operating point band, series, legend.
#include "report/render/svg.hpp"

#include "report/render/escape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

namespace prereg::render {
namespace svg_parts {

const char *colour(std::size_t i) {
  static constexpr std::array<const char *, 8> palette{"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                       "#E69F00", "#56B4E9", "#000000", "#8C6D31"};
  return palette[i % palette.size()];
}

std::string num(double v) { return fmt::format("{:.1f}", v); }

// The ticks of a log axis from 10^lo to 10^hi: 1-2-5 steps, else decades, else 1..9 steps.
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> out;
  for (const std::array<int, 3> mults :
       {std::array<int, 3>{1, 2, 5}, std::array<int, 3>{1, 0, 0}}) {
    out.clear();
    for (int k = static_cast<int>(std::floor(lo)) - 1; k <= static_cast<int>(std::ceil(hi)); ++k)
      for (const int m : mults) {
        if (m == 0)
          continue;
        const double t = m * std::pow(10.0, k);
        if (std::log10(t) >= lo - 1e-9 && std::log10(t) <= hi + 1e-9)
          out.push_back(t);
      }
    if (out.size() <= 8)
      break;
  }
  if (out.size() < 2) {
    out.clear();
    for (int k = static_cast<int>(std::floor(lo)) - 1; k <= static_cast<int>(std::ceil(hi)); ++k)
      for (int m = 1; m <= 9; ++m) {
        const double t = m * std::pow(10.0, k);
        if (std::log10(t) >= lo - 1e-9 && std::log10(t) <= hi + 1e-9)
          out.push_back(t);
      }
  }
  return out;
}

// Draws a marker of shape `index % 4` centred on (x, y).
std::string marker(std::size_t index, double x, double y, const std::string &colour, bool hollow) {
  const std::string style = fmt::format("fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\"",
                                        hollow ? "#ffffff" : colour, colour, hollow ? "2" : "1");
  switch (index % 4) {
  case 0:
    return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4.5\" {}/>", num(x), num(y), style);
  case 1:
    return fmt::format("<rect x=\"{}\" y=\"{}\" width=\"8\" height=\"8\" {}/>", num(x - 4),
                       num(y - 4), style);
  case 2:
    return fmt::format("<path d=\"M{} {}L{} {}L{} {}Z\" {}/>", num(x), num(y - 5.5), num(x + 5),
                       num(y + 4), num(x - 5), num(y + 4), style);
  default:
    return fmt::format("<path d=\"M{} {}L{} {}L{} {}L{} {}Z\" {}/>", num(x), num(y - 5.5),
                       num(x + 5.5), num(y), num(x), num(y + 5.5), num(x - 5.5), num(y), style);
  }
}

} // namespace svg_parts

namespace {

using svg_parts::log_ticks;
using svg_parts::marker;
using svg_parts::num;

// The plot area, in SVG units.
constexpr double width = 480, left = 66, right = 14, top = 34, plot_h = 220;
constexpr double plot_w = width - left - right;
constexpr double bottom = top + plot_h;

// The legend's lines (each a list of (series index, x)), laid out before the height is known.
struct legend_layout {
  std::vector<std::vector<std::pair<std::size_t, double>>> lines;
  double top = bottom + 50;
  double height = 0; ///< the whole chart's
};

legend_layout lay_out_legend(const chart &c) {
  legend_layout l;
  l.lines.resize(1);
  double lx = left;
  for (std::size_t i = 0; i < c.lines.size(); ++i) {
    const double w =
        34.0 + 7.0 * static_cast<double>(c.lines[i].arm.size() + c.lines[i].note.size()) + 14.0;
    if (lx + w > width - right && !l.lines.back().empty()) {
      l.lines.emplace_back();
      lx = left;
    }
    l.lines.back().emplace_back(i, lx);
    lx += w;
  }
  l.height = l.top + 18.0 * static_cast<double>(l.lines.size()) + 4;
  return l;
}

// Rows on a log scale, padded on both sides; over named axes, shape i of n at the middle of the
// i-th of n equal slots.
struct x_scale {
  double x0 = 0, x1 = 1;
  std::size_t slots = 0; ///< named axes: how many shapes; 0: the log scale
  [[nodiscard]] double operator()(double x) const {
    if (slots > 0)
      return left + (x + 0.5) / static_cast<double>(slots) * plot_w;
    return left + (std::log10(x) - x0) / (x1 - x0) * plot_w;
  }
};

x_scale make_x_scale(const chart &c) {
  if (!c.x_names.empty())
    return {0, 1, c.x_names.size()};
  const auto [xmin_it, xmax_it] = std::minmax_element(c.xs.begin(), c.xs.end());
  const double xl = std::log10(static_cast<double>(std::max<std::int64_t>(*xmin_it, 1)));
  const double xh = std::log10(static_cast<double>(std::max<std::int64_t>(*xmax_it, 1)));
  const double xpad = std::max(0.08 * (xh - xl), 0.15);
  return {xl - xpad, xh + xpad};
}

// The value axis, log or linear, and its ticks.
struct y_scale {
  bool log_y = true;
  double y0 = 0, y1 = 1;
  std::vector<double> ticks;
  [[nodiscard]] double operator()(double y) const {
    if (log_y) {
      const double l = y > 0.0 ? std::clamp(std::log10(y), y0, y1) : y0;
      return bottom - (l - y0) / (y1 - y0) * plot_h;
    }
    return bottom - (y - y0) / (y1 - y0) * plot_h;
  }
};

// Every value the axis must show: points and whiskers (positive ones on a log axis).
std::vector<double> plotted_values(const chart &c) {
  std::vector<double> values;
  for (const auto &s : c.lines)
    for (const auto &p : s.points)
      if (p) {
        for (const double v : {p->y, p->lo.value_or(p->y), p->hi.value_or(p->y)})
          if (!c.log_y || v > 0.0)
            values.push_back(v);
      }
  if (c.log_y && c.reference_y) // renderer 2's speedup chart: the baseline's 1x stays in view
    values.push_back(*c.reference_y);
  return values;
}

y_scale log_y_scale(const std::vector<double> &values) {
  y_scale s;
  double lo = 0, hi = 1;
  if (!values.empty()) {
    lo = std::log10(*std::min_element(values.begin(), values.end()));
    hi = std::log10(*std::max_element(values.begin(), values.end()));
  }
  const double span = std::max(hi - lo, 0.3);
  const double mid = (hi + lo) / 2.0;
  s.y0 = mid - span / 2.0 - 0.06 * span;
  s.y1 = mid + span / 2.0 + 0.06 * span;
  s.ticks = log_ticks(s.y0, s.y1);
  return s;
}

y_scale linear_y_scale(const std::vector<double> &values, std::optional<double> reference) {
  y_scale s;
  s.log_y = false;
  double hi = values.empty() ? 1.0 : *std::max_element(values.begin(), values.end());
  if (reference)
    hi = std::max(hi, *reference);
  hi = hi > 0.0 ? hi * 1.08 : 1.0; // an all-zero chart still gets a readable axis
  const double raw = hi / 5.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  s.y1 = std::ceil(hi / step) * step;
  for (int i = 0; i * step <= s.y1 + step * 1e-9; ++i)
    s.ticks.push_back(i * step);
  return s;
}

std::string open_svg(const chart &c, const std::string &id, double height) {
  std::string out = fmt::format(
      "<svg class=\"chart\" id=\"{}\" data-kind=\"{}\" "
      "data-pass=\"{}\" data-cols=\"{}\" data-arms=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" "
      "height=\"{}\" role=\"img\" aria-labelledby=\"{}-t\">\n",
      html(id), html(c.kind), html(c.pass), c.cols, c.lines.size(), num(width), num(height),
      num(width), num(height), html(id));
  out += fmt::format("<title id=\"{}-t\">{}</title>\n", html(id), html(c.title));
  out +=
      fmt::format("<text class=\"ctitle\" x=\"{}\" y=\"18\">{}</text>\n", num(left), html(c.title));
  return out;
}

// The operating point's band, under everything else.
std::string op_band(const chart &c, const x_scale &px) {
  if (!c.op_x)
    return "";
  const double x = px(static_cast<double>(*c.op_x));
  return fmt::format("<g class=\"op\"><rect x=\"{}\" y=\"{}\" width=\"20\" height=\"{}\" "
                     "fill=\"#fde68a\" fill-opacity=\"0.7\"/><text x=\"{}\" y=\"{}\" "
                     "text-anchor=\"middle\" class=\"oplabel\">operating point</text></g>\n",
                     num(x - 10), num(top), num(plot_h), num(std::clamp(x, left + 40, width - 50)),
                     num(top - 5));
}

std::string grid(const chart &c, const x_scale &px, const y_scale &py) {
  std::string out = "<g class=\"grid\">";
  for (const double t : py.ticks) {
    const double y = py(t);
    out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", num(left),
                       num(left + plot_w), num(y), num(y));
  }
  for (const auto x : c.xs) {
    const double X = px(static_cast<double>(x));
    out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", num(X), num(X), num(top),
                       num(bottom));
  }
  return out + "</g>\n";
}

// The x labels, skipping any that would overlap the one before.
std::string x_labels(const chart &c, const x_scale &px) {
  std::string out;
  double last_right = -1e9;
  for (const auto x : c.xs) {
    const std::string label =
        c.x_names.empty() ? fmt::format("{}", x) : c.x_names.at(static_cast<std::size_t>(x));
    const double X = px(static_cast<double>(x));
    const double half = 3.4 * static_cast<double>(label.size());
    if (X - half < last_right + 4)
      continue;
    last_right = X + half;
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", num(X),
                       num(bottom + 15), html(label));
  }
  return out;
}

std::string axes(const chart &c, const x_scale &px, const y_scale &py) {
  std::string out = "<g class=\"axis\">";
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\"/>",
                     num(left), num(top), num(plot_w), num(plot_h));
  for (const double t : py.ticks)
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", num(left - 5),
                       num(py(t) + 4), html(c.tick_text(t)));
  out += x_labels(c, px);
  if (c.x_names.empty())
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"alabel\">rows "
                       "(log scale; cols = {})</text>",
                       num(left + plot_w / 2), num(bottom + 33), c.cols);
  else
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"alabel\">{}</text>",
                       num(left + plot_w / 2), num(bottom + 33), html(c.x_title));
  out += fmt::format("<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\" "
                     "class=\"alabel\">{}</text>",
                     num(top + plot_h / 2), html(c.y_label));
  return out + "</g>\n";
}

std::string reference_line(const chart &c, const y_scale &py) {
  if (!c.reference_y)
    return "";
  const double y = py(*c.reference_y);
  return fmt::format("<g class=\"ref\"><line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/><text "
                     "x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text></g>\n",
                     num(left), num(left + plot_w), num(y), num(y), num(left + plot_w - 4),
                     num(y - 4), html(c.reference_label));
}

// A series' line through its points (lifted over gaps and, on a log axis, over values <= 0).
std::string series_path(const chart &c, const series &s, double dx, const x_scale &px,
                        const y_scale &py) {
  std::string path;
  bool pen_down = false;
  for (std::size_t j = 0; j < s.points.size(); ++j) {
    if (!s.points[j] || (c.log_y && s.points[j]->y <= 0.0)) {
      pen_down = false;
      continue;
    }
    path += fmt::format("{}{} {}", pen_down ? "L" : "M",
                        num(px(static_cast<double>(s.points[j]->x)) + dx), num(py(s.points[j]->y)));
    pen_down = true;
  }
  if (path.empty())
    return "";
  return fmt::format("<path d=\"{}\" fill=\"none\" stroke-width=\"1.8\"/>", path);
}

// One point: its tooltip, whiskers, the winner's ring, and the marker.
std::string series_point(std::size_t i, const point &p, double dx, const x_scale &px,
                         const y_scale &py) {
  const std::string colour = svg_parts::colour(i);
  const double X = px(static_cast<double>(p.x)) + dx;
  const double Y = py(p.y);
  std::string out = "<g class=\"pt" + std::string(p.hollow ? " unstable" : "") + "\"><title>" +
                    html(p.title) + "</title>";
  if (p.lo && p.hi) {
    const double a = py(*p.lo), b = py(*p.hi);
    out +=
        fmt::format("<path d=\"M{} {}V{}M{} {}H{}M{} {}H{}\" stroke-width=\"1.3\"/>", num(X),
                    num(a), num(b), num(X - 3), num(a), num(X + 3), num(X - 3), num(b), num(X + 3));
  }
  if (p.winner)
    out += fmt::format("<circle class=\"winner\" cx=\"{}\" cy=\"{}\" r=\"9\" fill=\"none\" "
                       "stroke-width=\"2\"/>",
                       num(X), num(Y));
  return out + marker(i, X, Y, colour, p.hollow) + "</g>";
}

// Series `i`: line, whiskers, markers with tooltips, nudged sideways so arms do not overlap.
std::string series_group(const chart &c, std::size_t i, const x_scale &px, const y_scale &py) {
  const series &s = c.lines[i];
  const double n = static_cast<double>(c.lines.size());
  const double dx = (static_cast<double>(i) - (n - 1.0) / 2.0) * 4.0;
  std::string out = fmt::format("<g class=\"series\" data-arm=\"{}\" stroke=\"{}\">", html(s.arm),
                                svg_parts::colour(i));
  out += series_path(c, s, dx, px, py);
  for (const auto &p : s.points)
    if (p)
      out += series_point(i, *p, dx, px, py);
  return out + "</g>\n";
}

std::string legend(const chart &c, const legend_layout &l) {
  std::string out = "<g class=\"legend\">";
  for (std::size_t line = 0; line < l.lines.size(); ++line) {
    const double y = l.top + 18.0 * static_cast<double>(line);
    for (const auto &[i, x] : l.lines[line]) {
      const std::string colour = svg_parts::colour(i);
      const bool empty = std::none_of(c.lines[i].points.begin(), c.lines[i].points.end(),
                                      [](const auto &p) { return p.has_value(); });
      out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" "
                         "stroke-width=\"1.8\"/>",
                         num(x), num(x + 24), num(y), num(y), colour);
      out += marker(i, x + 12, y, colour, false);
      out += fmt::format("<text x=\"{}\" y=\"{}\">{}{}{}</text>", num(x + 30), num(y + 4),
                         html(c.lines[i].arm), empty && c.lines[i].note.empty() ? " (no data)" : "",
                         html(c.lines[i].note));
    }
  }
  return out + "</g>\n";
}

} // namespace

std::string render_chart(const chart &c, const std::string &id) {
  const legend_layout l = lay_out_legend(c);
  const x_scale px = make_x_scale(c);
  const std::vector<double> values = plotted_values(c);
  const y_scale py = c.log_y ? log_y_scale(values) : linear_y_scale(values, c.reference_y);
  std::string out = open_svg(c, id, l.height);
  out += op_band(c, px);
  out += grid(c, px, py);
  out += axes(c, px, py);
  out += reference_line(c, py);
  for (std::size_t i = 0; i < c.lines.size(); ++i)
    out += series_group(c, i, px, py);
  return out + legend(c, l) + "</svg>";
}

} // namespace prereg::render
