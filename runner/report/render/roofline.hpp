// The roofs on the pages (schema_version 8, docs/report.md "The roofs"): the read, write and
// compute ceilings in the instrument table, a results table per block against the roofs, and
// in report.html a roofline chart per pass (log-log, both roofs, each arm's cells). Reports
// without roofs render exactly as before.
#pragma once

#include "report/render/table.hpp"
#include "report/render/view.hpp"

#include <string>

namespace prereg::render {

/// Whether the report's instrument measured the roofs.
[[nodiscard]] bool has_roofs(const view &v);
/// The instrument table's rows of the roofs: read ceiling, write ceiling, one compute ceiling
/// per element type.
void add_roof_rows(table &t, const report_instrument &in);
/// A results cell against the roofs: "87.1% of 4520 GB/s; 745 TFLOP/s (93.2%)".
[[nodiscard]] span roof_cell(const report_cell &c);
/// The caption of that table.
inline constexpr const char *roof_caption =
    "% of the cell's own bandwidth roof (its read/write mix; docs/analysis.md) and, where the "
    "operation declares FLOPs, TFLOP/s with the % of the compute ceiling";
/// report.html's roofline section: one chart per pass with cells that have FLOPs ("" without
/// roofs, or when no cell has FLOPs).
[[nodiscard]] std::string roofline_html(const view &v);

} // namespace prereg::render
