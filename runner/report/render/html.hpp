// report.html: one self-contained page as a short driver over its named sections.
#pragma once

#include "model/report_model.hpp"

#include <string>

namespace prereg::render {

/// report.html of `report`, in the layout of its tool.renderer; inline CSS and SVG, no script,
/// fetches nothing.
[[nodiscard]] std::string html_page(const report_document &report);

} // namespace prereg::render
