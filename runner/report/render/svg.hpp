// A chart drawn as one inline SVG element: axes, grid, operating point band, series, legend.
#pragma once

#include "report/render/chart.hpp"

#include <string>

namespace prereg::render {

/// `c` as an <svg class="chart"> element with id `id`; every text escaped, no script.
[[nodiscard]] std::string render_chart(const chart &c, const std::string &id);

} // namespace prereg::render
