// The tables of the measurements: results (arms x rows at one pass and cols), speedups, the
// kernel profile, and the flagged cells' notes (every renderer).
#pragma once

#include "report/render/table.hpp"
#include "report/render/view.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace prereg::render {

/// The text of one results cell.
using cell_text = std::function<span(const report_cell &)>;

/// One results table (arms x rows at one pass and cols), each cell by `cell_fn`; missing cells
/// say "not run", flagged ones carry ⚠ and their flags as a tooltip.
[[nodiscard]] table results_table(const view &v, const std::string &pass, std::int64_t cols,
                                  const cell_text &cell_fn);

/// The time table: renderer 1 picks a unit per cell, renderer 2 one per row (the unit of the
/// row's smallest median).
[[nodiscard]] table time_table(const view &v, const std::string &pass, std::int64_t cols);

/// Renderer 2's summary: per shape at one pass and cols, each arm's speedup over the first arm
/// (baseline median / arm median), the fastest arm in bold.
[[nodiscard]] table speedup_table(const view &v, const std::string &pass, std::int64_t cols);

/// A cell's % of the copy ceiling, with its bound where it is launch or bandwidth.
[[nodiscard]] span pct_cell(const report_cell &c);

/// The kernel clock's cell: kernel time per step (median) and the gap's share of the step.
[[nodiscard]] span kernel_cell(const report_cell &c);

/// A cell's peak memory in MB; renderer 3 writes "not measured" for an arm whose memory the
/// run did not measure (view::memory_not_measured), never its 0.
[[nodiscard]] cell_text peak_text(const view &v);

/// The profile: per cell with a kernel clock, its kernels by share of the step time (at most
/// `per_cell`, the largest first), the table a kernel engineer starts from.
[[nodiscard]] table profile_table(const view &v, std::size_t per_cell = 8);

/// The flagged cells of one results block, one (arm, note) each.
[[nodiscard]] std::vector<std::pair<std::string, std::string>>
flag_notes(const view &v, const std::string &pass, std::int64_t cols);

/// Renderer 4: the summary's cells excluded from verdicts at `cols`, every pass, one
/// (arm, "PASS ROWSxCOLS: why") each, in arm, pass, rows order.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> excluded_notes(const view &v,
                                                                              std::int64_t cols);

} // namespace prereg::render
