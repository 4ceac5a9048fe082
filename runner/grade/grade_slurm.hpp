// `prereg slurm TASK --grade` (docs/grading.md, "Scale out"): a submit script that grades every
// pending submission of a task as a Slurm job array, one submission per array task, with the
// baseline's job before it and the leaderboard's after it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace prereg::grade {

struct grade_slurm_options {
  std::filesystem::path prereg; ///< the prereg binary the jobs run (absolute)
  std::string task_hash;
  std::string task_id;
  std::filesystem::path heldout;               ///< the held-out secret (absolute), or empty
  bool all = false;                            ///< grade every current submission
  std::string partition;                       ///< empty: the cluster's default
  std::int64_t gpus_per_task = 0;              ///< 0: no --gpus-per-task line (a cpu task)
  std::filesystem::path store, key, out, work; ///< absolute
};

/// The script: run with `bash FILE` on a submit host. `prereg grade --open` prints the number N
/// of submissions it will grade (0: the script ends); then `sbatch` the baseline (part 0), the
/// array 1-N (--dependency=afterok on the baseline; task K runs `prereg grade --part K`), and
/// the close (afterok on the array), which writes the leaderboard's folder to
/// WORK/leaderboard.path.
[[nodiscard]] std::string grade_slurm_script(const grade_slurm_options &o);

} // namespace prereg::grade
