// The walls around one submission's grading run (docs/grading.md, "One submission, one
// process"): before `prereg run` starts (and puts up the measuring process's own sandbox), the
// process is moved into its own user and mount namespaces where the scratch folders and caches
// are empty and private, and the other submissions' files, builds and runs are hidden. It
// uses the kernel's namespaces directly, as runner/run/sandbox.cpp does.
#pragma once

#include "base/json.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace prereg::grade {

/// What the walls hide and what must stay as it is.
struct confine_plan {
  /// Paths (folders or files) that stay visible and writable as they are, even where they lie
  /// below a folder that is emptied (a store under /tmp): the store, the key, the run's folder.
  std::vector<std::filesystem::path> keep;
  /// A folder hidden under an empty tmpfs, and the paths below it shown again (the
  /// submission's own folder among the task's submissions).
  std::vector<std::pair<std::filesystem::path, std::vector<std::filesystem::path>>> masks;
  /// Files hidden under /dev/null (the held-out secret).
  std::vector<std::filesystem::path> hidden_files;
  /// False: no walls at all (the baseline's process, which runs no submission's code).
  bool walls = true;
};

/// The walls that stand, in order, and why any of the design's is missing ("" when none is).
struct confine_facts {
  std::vector<std::string>
      layers; ///< user-namespace, mount-namespace, private-scratch, others-hidden
  std::string reason;
  [[nodiscard]] json to_json() const;
  /// The namespaces stand but a later wall could not go up: the command was not run (status
  /// 126), and the caller must not take its outcome for the submission's.
  [[nodiscard]] bool half_built() const;
};

/// How a confined command ended.
struct confined_result {
  int exit_code = 1; ///< its exit status; 128 + N when a signal N ended it
  confine_facts facts;
  double wall_ms = 0;     ///< from the fork to its end, on this process's clock
  bool timed_out = false; ///< killed at the limit run_confined_body was given
};

/// Runs `argv` (execv) in a forked child confined by `plan`, its stdout and stderr written to
/// the two files. Without user namespaces it runs with no walls (the facts say why); when the
/// namespaces stand but a later wall fails, it is not run at all (facts.half_built()).
[[nodiscard]] confined_result run_confined(const std::vector<std::string> &argv,
                                           const confine_plan &plan,
                                           const std::filesystem::path &stdout_file,
                                           const std::filesystem::path &stderr_file);

/// The same with `body` run in the confined child instead of an exec: it must end the child
/// itself (exec or _Exit); if it returns, the child ends with status 127. `limit_s` above 0: a
/// child still running after that many seconds is killed (SIGKILL; what it started in its
/// sandbox dies with it) and the result says timed_out.
[[nodiscard]] confined_result run_confined_body(const std::function<void()> &body,
                                                const confine_plan &plan,
                                                const std::filesystem::path &stdout_file,
                                                const std::filesystem::path &stderr_file,
                                                double limit_s = 0);

} // namespace prereg::grade
