// `prereg grade` (docs/grading.md, "Grading"): a driver over three steps that may also run on
// different machines (Slurm): open (pending submissions chosen, C sources built, the grading's
// protocols frozen, a work folder written), the parts (the baseline's process, then one confined
// process per submission), close (the signed leaderboard).
#pragma once

#include "base/json.hpp"
#include "grade/confine.hpp"
#include "grade/submission.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace prereg::grade {

/// The leaderboard format's version (leaderboard.json member leaderboard_version).
inline constexpr int leaderboard_format_version = 1;
/// The layout of leaderboard.md/html this build writes (tool.renderer).
inline constexpr int leaderboard_renderer_version = 1;
inline constexpr const char *leaderboard_payload_type = "application/vnd.prereg.leaderboard+json";

/// What every step needs to know about the store and this machine.
struct grade_env {
  std::filesystem::path store_root;
  std::filesystem::path key_path;
  std::string prereg; ///< this binary: the parts' runs exec `prereg run`
  int device_ordinal = 0;
};

/// The command line of a part's run: `prereg run HASH --store S --key K --out OWN --device N
/// --quiet` with this binary (the caller adds what the part needs after it).
[[nodiscard]] std::vector<std::string> run_argv(const grade_env &env, const store &s,
                                                const std::string &hash,
                                                const std::filesystem::path &own);

/// `prereg grade TASK` (or `--open`).
struct open_options {
  std::string task;                            ///< hash, prefix or id of a frozen task
  std::optional<std::filesystem::path> secret; ///< the held-out secret (prereg seal)
  bool all = false;                            ///< every current submission, graded or not
  std::filesystem::path work;                  ///< empty: OUT/<task id>/.<grade id>.work
  std::filesystem::path out_dir;               ///< where leaderboards go (default ./reports)
};

/// One part of a grading as its work folder's plan.json holds it.
struct plan_part {
  submission sub;            ///< empty id: the baseline
  std::string protocol_hash; ///< "" when it has none (a C source that did not build)
  json build = nullptr;      ///< C source: {ok, log, command, confinement}
};

/// A grading's work folder (plan.json): what open decided, read back by the parts and close.
struct grading_plan {
  std::string grade_id;
  std::string task_hash;
  std::string nonce;
  std::string opened_at;
  json reveal = nullptr;             ///< the held-out secret's JSON, or null (the task has none)
  std::filesystem::path secret_file; ///< hidden from the submissions' processes
  std::filesystem::path out_dir;
  std::vector<plan_part> parts; ///< [0] the baseline, then the submissions
  [[nodiscard]] json to_json() const;
  [[nodiscard]] static grading_plan from_json(const json &j, const std::string &where);
};

/// The work folder's plan (exit 2 if it holds none).
[[nodiscard]] grading_plan read_plan(const std::filesystem::path &work);

/// Opens a grading: the task verified, its secret checked against its commitment, the pending
/// submissions chosen (every current one with `all`), a fresh nonce and grade id drawn, C sources
/// built, every protocol frozen, plan.json written. Returns the work folder, or an empty path
/// when nothing is pending (nothing written).
[[nodiscard]] std::filesystem::path open_grading(const grade_env &env, const open_options &o);

/// Runs part `k` of the work folder's plan (0: the baseline, unconfined; k >= 1: submission k,
/// confined, its ceiling and launch floor the baseline's) and writes results/part-K.json. A
/// submission's failed run is a result, not an error; the baseline's is an error.
void run_part(const grade_env &env, const std::filesystem::path &work, std::size_t k);

/// Closes a grading: every part's result read and audited, the earlier leaderboard's entries
/// of names not graded now carried over, the leaderboard built, signed, written under
/// out_dir/<task id>/<grade id>/ with its parts and recorded in the ledger (`grade`). Returns the
/// leaderboard's folder.
std::filesystem::path close_grading(const grade_env &env, const std::filesystem::path &work,
                                    const std::vector<std::string> &trust);

/// open, every part in turn, close; then the work folder is removed.
std::filesystem::path grade_task(const grade_env &env, const open_options &o,
                                 const std::vector<std::string> &trust);

} // namespace prereg::grade
