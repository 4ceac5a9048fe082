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

/// A submission's graded facts. A submission with any exclusion scores 0 (interval 0..0).
struct entry_score {
  std::vector<graded_cell> cells;
  std::vector<exclusion> exclusions;
  double score = 0, lo = 0, hi = 0;
  [[nodiscard]] bool excluded() const { return !exclusions.empty(); }
};

/// What one submission's grading left.
struct graded_run {
  const protocol *grading = nullptr;       ///< the submission's grading protocol
  std::string grading_hash;                ///< its hash (seeds the interval's bootstrap)
  const report_document *report = nullptr; ///< null: the run left no report
  std::string failure;                     ///< why not (the run's error line), else ""
  /// The whole process's wall time on the parent's clock [ms] (NaN: not known).
  double wall_ms = std::numeric_limits<double>::quiet_NaN();
};

/// Scores one submission against its grading's baseline report: the cells of its grading
/// protocol in plan order, the exclusions in that order (run-failed, instrument-not-given,
/// beyond-wall-time, then per cell not-measured, arm-error, correctness, the defects
/// input-mutated, off-window-work, kernel-above-step, no-arm-kernel, and below-floor), and,
/// without any, the score and its interval by `task` (its statistic, confidence, resamples).
/// Throws invalid_input when the baseline report lacks a cell or failed at one.
[[nodiscard]] entry_score score_entry(const protocol &task, const report_document &baseline,
                                      const graded_run &run);

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

} // namespace prereg::grade
