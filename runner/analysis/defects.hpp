// Instrument defects (docs/analysis.md section 6): a pure function of a run's raw record, its
// derived cell statistics and the registry, in a documented deterministic order.
#pragma once

#include "analysis/cell_stats.hpp"
#include "base/json.hpp"
#include "model/report_model.hpp"
#include "spec/protocol.hpp"
#include "spec/records.hpp"
#include "spec/registry.hpp"

#include <functional>
#include <span>
#include <string_view>
#include <vector>

namespace prereg {

/// Every defect code, in the contract's table order (also the order of detect_defects' output).
[[nodiscard]] std::span<const std::string_view> defect_codes();

/// True for the codes `prereg audit` recomputes from samples_ms and the instrument record:
/// above-ceiling, unstable-cell, timer-resolution, drift.
[[nodiscard]] bool derivable_from_raw(std::string_view code);

/// The registry entry of a protocol arm, or null when unknown (no zero-peak-memory check).
using arm_lookup = std::function<const arm_info *(const arm_spec &)>;

/// Every defect of the run (code, cell?, message, evidence), grouped by code in
/// defect_codes() order, within a code in the order of run.cells (correctness-failure: of
/// run.correctness). `stats` must be compute_cell_statistics(proto, run). Throws `error`
/// (exit 1) if `stats` does not match run.cells.
[[nodiscard]] std::vector<report_defect> detect_defects(const protocol &proto, const raw_run &run,
                                                        std::span<const cell_statistics> stats,
                                                        const arm_lookup &registry);

/// detect_defects with the build's registry: find_arm(proto.device, arm.kernel).
[[nodiscard]] std::vector<report_defect> detect_defects(const protocol &proto, const raw_run &run,
                                                        std::span<const cell_statistics> stats);

} // namespace prereg
