// Where a run's time went (renderer 5, docs/report.md "phases"): its phases, the timing phase's
// parts and the run's cost against its samples.
#pragma once

#include "report/render/table.hpp"
#include "report/render/view.hpp"

#include <string>

namespace prereg::render {

/// Whether the page shows where the time went: renderer 5 or later and a report with phases.
[[nodiscard]] bool has_phases(const view &v);

/// One line: the wall time, the measured work (timed and warm-up windows, the arms' first
/// calls) and the cost goal 3 x work + 10 s with whether the run met it.
[[nodiscard]] std::string phases_line(const view &v);

/// The phases: name, wall time, share of the run; the timing phase's parts indented below it.
[[nodiscard]] table phases_table(const view &v);

} // namespace prereg::render
