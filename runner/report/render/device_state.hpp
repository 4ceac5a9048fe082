// The pages' device-state section (schema_version 7): per cell the stopping rule's stop reason
// and precision, the clocks, power and temperature read after each sample, the throttled
// samples; in report.html a strip per cell, the samples above and the SM clock and power
// under them. Reports without states or stop records have no such section.
#pragma once

#include "model/report_model.hpp"

#include <string>

namespace prereg::render {

/// Whether any cell has per-sample states or a stop record.
[[nodiscard]] bool has_device_state(const report_document &r);
/// report.md's section ("" when has_device_state is false).
[[nodiscard]] std::string device_state_markdown(const report_document &r);
/// report.html's section with the per-cell strips ("" when has_device_state is false).
[[nodiscard]] std::string device_state_html(const report_document &r);

} // namespace prereg::render
