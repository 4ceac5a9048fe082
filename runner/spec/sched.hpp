// The JSON of a cell's per-sample scheduling record (records.hpp, sched_sample), one form for
// the measuring process's channel and for report.json (docs/report.md, schema_version 8).
#pragma once

#include "base/json.hpp"
#include "spec/records.hpp"

#include <string>
#include <vector>

namespace prereg {

/// {wall_ms, run_delay_ms, stops}: one array each, one value per sample (run_delay_ms null
/// where the kernel did not say).
[[nodiscard]] json sched_json(const std::vector<sched_sample> &sched);
/// Reads sched_json's form with `samples` values each into `out`; returns what is wrong
/// ("stops has 3 values for 4 samples"), or "".
[[nodiscard]] std::string read_sched_json(const json &j, std::size_t samples,
                                          std::vector<sched_sample> &out);

} // namespace prereg
