// `prereg reward TASK FILE...` (docs/grading.md, "The reward"): one submission graded against a
// task in one call, for training loops: its score (0 when it failed or is excluded), the
// reasons, and its signed report. The baseline is measured once per task, device and set of
// axes, and reused by later calls.
#pragma once

#include "base/json.hpp"
#include "grade/grading.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace prereg::grade {

struct reward_options {
  std::string task;
  std::vector<std::filesystem::path> files;    ///< the entry file first
  std::string entry;                           ///< empty: the task's task.entry
  std::optional<std::filesystem::path> secret; ///< grade the held-out shapes too
  std::filesystem::path out_dir;               ///< rewards go to OUT/<task id>/rewards/
  std::filesystem::path baseline;              ///< a baseline report to use (empty: the cached)
};

/// Grades the files against the task: they are pinned into the store, a fresh grading protocol
/// (role "reward", a fresh nonce) is frozen and run in a confined process with the baseline's
/// floor and ceiling, re-timed in a second process when the first excludes nothing, and scored as
/// a leaderboard entry would be. Returns {score, score_lo, score_hi, excluded, exclusions, cells,
/// report, retime, baseline, protocol_hash, submission, confinement, seconds}.
[[nodiscard]] json reward(const grade_env &env, const reward_options &o);

} // namespace prereg::grade
