// A run's phases for its report (docs/report.md, "phases"): the run's own steps around the
// engine's phases, each with its wall time.
#pragma once

#include "model/report_model.hpp"
#include "spec/records.hpp"

namespace prereg {

/// The report's phases: "start" (verify, the measuring side, the key, the plan, run-start:
/// `start_ms`), the engine's phases (raw.phases), "measuring side" (what of the measure call's
/// `measure_ms` the engine's phases leave out: a measuring child's start-up and transfer; at
/// least 0), "analysis" (`analysis_ms`); the timing phase's parts from raw.timing_parts; every
/// time rounded to a microsecond, `wall_ms` too (measured on its own, not summed).
[[nodiscard]] report_phases make_report_phases(double start_ms, double measure_ms,
                                               const raw_run &raw, double analysis_ms,
                                               double wall_ms);

} // namespace prereg
