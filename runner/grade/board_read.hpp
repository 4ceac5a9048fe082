// A leaderboard read back into the inputs it was built from (board.hpp): what the audit
// rebuilds it from, and what a later grading carries over.
#pragma once

#include "grade/board.hpp"
#include "grade/heldout.hpp"
#include "store/store.hpp"

#include <filesystem>
#include <string>

namespace prereg::grade {

/// The grading protocol of `sub` (or the baseline's, when `sub` is null) in the grading
/// `grade_id` with `nonce`, as `prereg grade` froze it: its normalised body.
[[nodiscard]] json rebuilt_grading_body(const frozen_protocol &task, const json &reveal,
                                        const std::string &grade_id, const std::string &nonce,
                                        const submission *sub);

/// leaderboard.json's members read back into board inputs: the task from `task` (the store's
/// frozen copy), each part's report from `dir`/<its path>, each entry's grading protocol
/// rebuilt. Malformed members are exit 2 naming them.
[[nodiscard]] board_inputs inputs_from_board(const json &board, const std::filesystem::path &dir,
                                             const frozen_protocol &task);

/// A submission as an entry of leaderboard.json quotes it.
[[nodiscard]] submission submission_from_json(const json &j, const std::string &task_hash);

} // namespace prereg::grade
