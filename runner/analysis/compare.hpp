// Comparing two reports cell by cell: the ratio of medians B/A with a percentile-bootstrap
// confidence interval (docs/report.md, "Comparing two reports").
#pragma once

#include "base/json.hpp"
#include "model/report_model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace prereg {

/// The smallest ratio difference compare calls a difference by default (5%).
inline constexpr double default_min_effect = 0.05;

/// The generator seed of one compared cell: stream_seed(seed_from_hash(A's protocol hash) ^
/// rotl(seed_from_hash(B's protocol hash), 1), bootstrap) ^ FNV-1a 64 of "arm|pass|rowsxcols".
[[nodiscard]] std::uint64_t compare_cell_seed(const std::string &hash_a, const std::string &hash_b,
                                              const std::string &cell_label);

/// Every cell present in both reports (same arm id, pass, rows, cols): median_a_ms,
/// median_b_ms, ratio = median B / median A, [ci_lo, ci_hi] at A's analysis.confidence from
/// A's bootstrap_resamples, and mark faster | slower | same (same if the interval holds 1),
/// or no-samples. Throws `error` (exit 2) naming "report A" if its protocol body lacks a valid
/// analysis.confidence or bootstrap_resamples, or naming the report that repeats a cell.
/// Differences smaller than `min_effect` (ratio within [1/(1+e), 1+e]) are marked same.
[[nodiscard]] json compare_reports(const report_document &a, const report_document &b,
                                   double min_effect = default_min_effect);

/// Several runs a side: a cell is compared when every run has it; the point ratio is of the
/// pooled medians; each bootstrap resample draws as many runs as the side has, with
/// replacement, then each drawn run's samples with replacement (a hierarchical bootstrap, so
/// the interval covers run-to-run variation). With one run a side, as above.
[[nodiscard]] json compare_reports(const std::vector<report_document> &a,
                                   const std::vector<report_document> &b,
                                   double min_effect = default_min_effect);

/// compare_reports of the two report.json objects parsed by the report model; a malformed one
/// is `error` (exit 2) naming "report A"/"report B" and the JSON path.
[[nodiscard]] json compare_reports(const json &a, const json &b,
                                   double min_effect = default_min_effect);

/// The comparison as text: a header and an aligned table (cell, median A, median B, ratio,
/// [lo, hi], mark), then the cells found in only one report.
[[nodiscard]] std::string render_comparison(const json &comparison);

} // namespace prereg
