// The tables of what the run concluded: predictions, defects, deviations, correctness (both
// renderers).
#pragma once

#include "report/render/table.hpp"
#include "report/render/view.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace prereg::render {

/// Where a prediction is evaluated ("rows 64; pass fwd", or "every cell"), from its `at`.
[[nodiscard]] std::string prediction_at(const view &v, const std::string &id);

/// One row per prediction: id, verdict, criterion, where.
[[nodiscard]] table prediction_summary(const view &v);

/// A prediction's p per selected cell.
[[nodiscard]] table prediction_cells(const prediction_result &p);

/// The defects: code, cell, message, evidence.
[[nodiscard]] table defects_table(const view &v);

/// The deviations: kind, cell, message, details.
[[nodiscard]] table deviations_table(const view &v);

/// The correctness checks: counts, a per arm and pass table, and one line per failure.
struct correctness_summary {
  std::size_t checks = 0;
  std::size_t failed = 0;
  table per_arm;
  std::vector<std::string> failures;
};

/// The correctness checks of the report, summarised.
[[nodiscard]] correctness_summary summarise_correctness(const view &v);

/// Renderer 2's note on what the tolerance and "max rel error" mean.
inline constexpr const char *tolerance_text =
    "Each output passes if every element has |out − ref| ≤ atol + rtol · max|ref| (the "
    "tolerance is relative to that output's largest reference magnitude, not to each "
    "element). \"max rel error\" is the largest element-wise |out − ref| / |ref|: it can exceed "
    "1 where a reference value is near 0 while the check passes.";

} // namespace prereg::render
