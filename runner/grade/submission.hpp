// Submissions to a task (docs/grading.md, "Submissions"): files pinned by SHA-256 into the store
// and a signed `submit` ledger entry; never changed, only superseded by a later one of the name.
#pragma once

#include "base/json.hpp"
#include "crypto/crypto.hpp"
#include "store/store.hpp"

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace prereg::grade {

/// One pinned file of a submission.
struct submitted_file {
  std::string name;   ///< its base name, as kept in the submission's folder
  std::string sha256; ///< of its bytes
  std::uint64_t bytes = 0;
};

/// What a submission is: its code's kind decides the arm it becomes.
enum class submission_kind { python, plugin, c_source };

/// A `submit` ledger entry, read back.
struct submission {
  std::string id;   ///< NAME.N: the name's N-th submission to the task
  std::string name; ///< the submitter's name (the arm id in its grading protocol)
  submission_kind kind = submission_kind::python;
  std::string entry; ///< the function (python) or arm name (plugin, C)
  std::vector<submitted_file> files;
  std::string supersedes; ///< the id it replaces ("" for a name's first)
  std::string time;       ///< the ledger entry's time
  std::int64_t seq = 0;   ///< the ledger entry's seq
  /// The entry's JSON members besides the ledger's own (what the leaderboard quotes).
  [[nodiscard]] json to_json() const;
};

/// "python" | "plugin" | "c".
[[nodiscard]] std::string kind_name(submission_kind k);

/// Every submission to `task_hash` in `entries`, in ledger order.
[[nodiscard]] std::vector<submission> submissions_of(std::span<const json> entries,
                                                     const std::string &task_hash);

/// The folder a submission's files are kept in: STORE/submissions/<task hash>/<id>/.
[[nodiscard]] std::filesystem::path submission_dir(const store &s, const std::string &task_hash,
                                                   const std::string &id);
/// The same, relative to the store (how grading protocols name the files).
[[nodiscard]] std::string submission_rel(const std::string &task_hash, const std::string &id);

/// What `prereg submit` was given.
struct submit_request {
  std::vector<std::filesystem::path> files; ///< the entry file first
  std::string name;
  std::string entry; ///< empty: the task's task.entry
};

/// The task `arg` names in `s` (an id or hash prefix), which must be a frozen protocol with a
/// `task` section (exit 2 otherwise).
[[nodiscard]] frozen_protocol load_task(const store &s, const std::string &arg);

/// Validates the request (the name's form, the files' kinds, sizes and names), copies the files
/// into the submission's folder and appends the signed `submit` entry, all under the store's
/// lock. Returns the submission as recorded.
submission submit(const store &s, const frozen_protocol &task, const submit_request &r,
                  const signing_key &key);

/// Refuses (exit 2) a name that is not `[a-z][a-z0-9_-]{0,47}` or is a word of the expect
/// language: a submission's name is the arm id of its grading protocol.
void check_submission_name(const std::string &name);

} // namespace prereg::grade
