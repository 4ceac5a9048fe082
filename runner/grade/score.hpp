// A submission's score from its grading's reports (docs/grading.md, "The score" and
// "Exclusions"): per graded cell the speed-up over the baseline, the exclusions, the score and
// its bootstrap interval, and the ranks. A pure function of the reports: the audit calls it too.
#pragma once

#include "base/json.hpp"
#include "model/report_model.hpp"
#include "spec/protocol.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace prereg::grade {

/// One cell of a grading: a pass and a shape, public or held out.
struct graded_cell {
  cell_key key; ///< the submission's arm at that pass and shape
  bool heldout = false;
  double baseline_ms = std::numeric_limits<double>::quiet_NaN();   ///< the baseline's statistic
  double submission_ms = std::numeric_limits<double>::quiet_NaN(); ///< NaN: not measured
  double floor_ms = std::numeric_limits<double>::quiet_NaN();      ///< the physical floor
  double speedup = std::numeric_limits<double>::quiet_NaN();       ///< baseline / submission
  bool correct = false; ///< its correctness record passed (gate and spot checks)
};

/// Why a submission is excluded: a code (docs/grading.md, "Exclusions"), the cell, the detail.
struct exclusion {
  std::string code;
  std::optional<cell_key> cell;
  std::string detail;
};

/// The re-timing's rule (docs/grading.md, "The re-timing"): the first process's timing is not
/// confirmed when the second process's lower quartile exceeds retime_factor x the first's upper
/// quartile at the re-timed cell. The second process takes retime_samples timed samples (at
/// least input_sets - 1). A re-timing that fails that rule alone is repeated in a fresh process,
/// up to retime_attempts re-timings in all (a noisy machine's stretch is not a fabrication).
inline constexpr double retime_factor = 4;
inline constexpr std::int64_t retime_samples = 10;
inline constexpr std::size_t retime_attempts = 3;

/// A re-timing's quartiles of one process's samples at the re-timed cell.
struct retime_side {
  std::size_t n = 0;
  double q25 = std::numeric_limits<double>::quiet_NaN();
  double median = std::numeric_limits<double>::quiet_NaN();
  double q75 = std::numeric_limits<double>::quiet_NaN();
};

/// What one re-timing found: the cell, both processes' quartiles, whether it confirmed.
struct retime_facts {
  cell_key cell;
  retime_side first, second; ///< second.n == 0: the second process left no samples there
  bool confirmed = false;
  bool slower_only = false; ///< its one failure was the factor rule: the grading re-times again
};

/// A submission's graded facts. A submission with any exclusion scores 0 (interval 0..0).
struct entry_score {
  std::vector<graded_cell> cells;
  std::vector<exclusion> exclusions;
  /// Each re-timing judged, in the order they ran (the last one decides); empty when the first
  /// process excluded the submission. With none recorded, one entry: no second process.
  std::vector<retime_facts> retimes;
  double score = 0, lo = 0, hi = 0;
  [[nodiscard]] bool excluded() const { return !exclusions.empty(); }
};

/// The second, fresh process that re-timed a submission (docs/grading.md, "The re-timing").
struct retime_run {
  cell_key cell;                           ///< the cell it measured (the submission's arm)
  const report_document *report = nullptr; ///< null: it left no report
  std::string failure;                     ///< why not, else ""
  double wall_ms = std::numeric_limits<double>::quiet_NaN(); ///< its process's wall time
};

/// What one submission's grading left.
struct graded_run {
  const protocol *grading = nullptr;       ///< the submission's grading protocol
  std::string grading_hash;                ///< its hash (seeds the interval's bootstrap)
  const report_document *report = nullptr; ///< null: the run left no report
  std::string failure;                     ///< why not (the run's error line), else ""
  /// The whole process's wall time on the parent's clock [ms] (NaN: not known).
  double wall_ms = std::numeric_limits<double>::quiet_NaN();
  /// The re-timings in the order they ran; none (then a first process that excludes nothing is
  /// excluded as `not-confirmed`, unless first_only).
  std::vector<const retime_run *> retimes{};
  /// Score the first process alone (the grading deciding whether to re-time): no `not-confirmed`.
  bool first_only = false;
};

/// Scores one submission against its grading's baseline report: the cells of its grading
/// protocol in plan order, the exclusions in that order (run-failed, instrument-not-given,
/// beyond-wall-time, then per cell not-measured, arm-error, correctness, the defects
/// input-mutated, off-window-work, kernel-above-step, no-arm-kernel, and below-floor; without
/// any of those, not-confirmed from the re-timing), and, without any, the score and its
/// interval by `task` (its statistic, confidence, resamples).
/// Throws invalid_input when the baseline report lacks a cell or failed at one.
[[nodiscard]] entry_score score_entry(const protocol &task, const report_document &baseline,
                                      const graded_run &run);

/// Whether the grading re-times `e` again: each re-timing so far failed the factor rule alone
/// (then that is its one exclusion) and fewer than retime_attempts ran.
[[nodiscard]] bool retime_again(const entry_score &e);

/// The cell a re-timing measures after a first process that excludes nothing (`first`): the
/// `at` cell of a `speedup_at` task, else the graded cell of the largest speed-up (the first in
/// plan order on a tie), the cell a fabricated time would raise the score by most.
[[nodiscard]] cell_key retime_cell(const task_spec &t, const entry_score &first);

/// The physical floor of a cell [ms]: bytes over margin x the copy ceiling (and FLOPs over the
/// declared compute ceiling, where both are known), the larger of the two; NaN if unknown.
[[nodiscard]] double floor_ms(const task_spec &t, double ceiling_gbps, std::uint64_t bytes,
                              double flops);

/// Ranks over `scores`: an excluded entry gets 0 (unranked); otherwise 1 + the number of
/// unexcluded entries whose interval lies wholly above its own (lo above its hi), so entries
/// whose intervals overlap are not separated.
[[nodiscard]] std::vector<std::int64_t> ranks_of(const std::vector<const entry_score *> &scores);

/// An entry's cells and exclusions as the leaderboard writes them.
[[nodiscard]] json cells_json(const entry_score &e);
[[nodiscard]] json exclusions_json(const entry_score &e);
/// One re-timing's judged facts: {first, second: {n, q25, median, q75}, factor, confirmed}.
[[nodiscard]] json retime_facts_json(const retime_facts &f);

} // namespace prereg::grade
