// report.md: the page as a short driver over its named sections.
#pragma once

#include "model/report_model.hpp"

#include <string>

namespace prereg::render {

/// report.md of `report`, in the layout of its tool.renderer.
[[nodiscard]] std::string markdown_page(const report_document &report);

} // namespace prereg::render
