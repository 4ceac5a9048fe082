// A grading's protocols (docs/grading.md, "A grading's protocols"): the task's body with its
// axes extended by the held-out secret's, its arms the baselines or one submission, and a
// `grading` member naming the task, the grading, the role, the nonce and the seed. Frozen in the
// store without running any of their code; rebuilt byte for byte by the audit.
#pragma once

#include "base/json.hpp"
#include "grade/heldout.hpp"
#include "grade/submission.hpp"
#include "spec/records.hpp"
#include "store/store.hpp"

#include <string>

namespace prereg::grade {

/// What a grading mixes into each of its protocols.
struct grading_facts {
  std::string grade_id;
  std::string nonce; ///< 32 hex digits
  std::string seed;  ///< the held-out seed, or "" (no secret)
};

/// The id of a task's grading protocols: the task's id (cut to 58 characters) and "-grade".
[[nodiscard]] std::string grading_protocol_id(const std::string &task_id);

/// The file a submission's arm runs, relative to the store: its entry file, or for C source the
/// library its grading built (builds/<grade id>/<submission id>/libsubmission.so).
[[nodiscard]] std::string arm_file_rel(const std::string &task_hash, const submission &sub,
                                       const std::string &grade_id);

/// The protocol body of the grading's baseline process (role "baseline": the task's arms), or
/// of one submission's (role "submission" or "reward": the submission as the only arm, its id
/// its name). `task` is the frozen task's body; `axes` its grading axes (grading_axes).
[[nodiscard]] json grading_body(const json &task_body, const std::string &task_hash,
                                const json &axes, const grading_facts &g, const std::string &role,
                                const submission *sub);

/// The protocol of a submission's re-timing (docs/grading.md, "The re-timing"): its first
/// process's protocol body `first` (normalised) at one cell: the cell's pass and shape alone,
/// retime_samples timed samples (at least input_sets - 1; no stopping rule), role "retime",
/// and `nonce`, drawn after the first process ended.
[[nodiscard]] json retime_body(const json &first, const cell_key &cell, const std::string &nonce);

/// Freezes `body` in `s` (validated; its outside arms' files resolved against the store's root
/// and hashed; nothing loaded or run); returns its hash. Already frozen: its hash.
std::string freeze_grading(const store &s, const json &body, const signing_key &key);

} // namespace prereg::grade
