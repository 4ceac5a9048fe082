// Per-cell trends across a protocol's audited runs, and the steps found in them (internal).
#pragma once

#include "site/history.hpp"
#include "site/steps.hpp"

#include <string>
#include <vector>

namespace prereg::site::detail {

/// One cell's medians over the audited runs that measured it.
struct series {
  std::string label;                      ///< the cell's label, "ARM PASS SHAPE"
  std::vector<const report_facts *> runs; ///< in run order
  std::vector<double> medians_ms;         ///< one per run
  std::vector<step> steps;
};

/// The series of `p`'s audited reports, in first-seen cell order, each with its steps.
[[nodiscard]] std::vector<series> series_of(const protocol_facts &p);

/// The steps table (one row per step: cell, run, commit, device, before, after, change).
[[nodiscard]] std::string render_steps(const std::vector<series> &all);

/// One inline SVG chart per series: the medians joined, each step's levels drawn.
[[nodiscard]] std::string render_charts(const std::vector<series> &all);

} // namespace prereg::site::detail
