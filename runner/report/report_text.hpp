// The human files of a report, rendered from report.json alone (so `prereg report` can
// regenerate them byte for byte).
#pragma once

#include "base/json.hpp"
#include "model/report_model.hpp"

#include <string>

namespace prereg {

/// report.md: environment and instrument header, per-pass tables, predictions, defects.
[[nodiscard]] std::string render_markdown(const report_document &report);

/// report.html: one self-contained page with inline SVG charts; fetches nothing.
[[nodiscard]] std::string render_html(const report_document &report);

/// render_markdown of report.json parsed by the report model (`error`, exit 2, naming the JSON
/// path if it does not parse).
[[nodiscard]] std::string render_markdown(const json &report);

/// render_html of report.json parsed by the report model (`error`, exit 2, naming the JSON path
/// if it does not parse).
[[nodiscard]] std::string render_html(const json &report);

} // namespace prereg
