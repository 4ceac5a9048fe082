// Per-cell trends across a protocol's audited runs, and the steps and jumps found in them
// (internal).
#pragma once

#include "site/history.hpp"
#include "site/steps.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace prereg::site::detail {

/// One cell's medians over the audited runs that measured it.
struct series {
  std::string label;                      ///< the cell's label, "ARM PASS SHAPE"
  std::vector<const report_facts *> runs; ///< in run order
  std::vector<double> medians_ms;         ///< one per run
  std::vector<double> q1_ms;              ///< one per run
  std::vector<double> q3_ms;              ///< one per run
  std::vector<step> steps;                ///< detect_steps over the medians
  std::vector<step> jumps;                ///< detect_jumps, less those where a step starts
};

/// The series of `p`'s audited reports, in first-seen cell order, each with its steps and jumps.
[[nodiscard]] std::vector<series> series_of(const protocol_facts &p);

/// The steps table (one row per step or jump: cell, kind, run, commit, device, before, after,
/// change), each run linked to its report under `reports_href`.
[[nodiscard]] std::string render_steps(const std::vector<series> &all,
                                       std::string_view reports_href);

/// One inline SVG chart per series: the interquartile band, the medians joined, one point per
/// run (its date, run id, median and IQR on hover; a link to its report), each step's levels
/// and a mark at each step and jump.
[[nodiscard]] std::string render_charts(const std::vector<series> &all,
                                        std::string_view reports_href);

} // namespace prereg::site::detail
