// A chart drawn as one inline SVG element: axes, grid, operating point band, series, legend.
#pragma once

#include "report/render/chart.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace prereg::render {

/// The pieces every chart draws with (the charts of svg.cpp, the roofline of roofline.cpp).
namespace svg_parts {
/// The colour of series `i` (a colour-blind-safe palette of 8, then again).
[[nodiscard]] const char *colour(std::size_t i);
/// A coordinate: one decimal.
[[nodiscard]] std::string num(double v);
/// The ticks of a log axis from 10^lo to 10^hi: 1-2-5 steps, else decades, else 1..9 steps.
[[nodiscard]] std::vector<double> log_ticks(double lo, double hi);
/// A marker of shape `index % 4` (circle, square, triangle, diamond) centred on (x, y).
[[nodiscard]] std::string marker(std::size_t index, double x, double y, const std::string &colour,
                                 bool hollow);
} // namespace svg_parts

/// `c` as an <svg class="chart"> element with id `id`; every text escaped, no script.
[[nodiscard]] std::string render_chart(const chart &c, const std::string &id);

} // namespace prereg::render
