// The audit of a leaderboard (docs/audit.md, "The audit of a leaderboard"; docs/grading.md):
// its signature, the task, the held-out reveal against the commitment, the grading's protocols,
// every kept report's own audit, the submissions against the ledger, every score and rank
// recomputed from the reports' raw samples, the pages and the ledger's `grade` entry.
#pragma once

#include "audit/audit.hpp"

#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

namespace prereg::grade {

/// True if `dir` holds a leaderboard.json (a leaderboard, not a run report).
[[nodiscard]] bool is_leaderboard(const std::filesystem::path &dir);

/// The checks of a leaderboard's audit, in order: envelope, task, reveal, protocols, parts,
/// submissions, scores, pages, ledger.
[[nodiscard]] std::span<const std::string_view> leaderboard_check_names();

/// Audits the leaderboard in `dir` against the store. Never throws for a failed check.
[[nodiscard]] audit_result audit_leaderboard(const std::filesystem::path &dir, const store &s,
                                             const trust_root &trust,
                                             const std::vector<std::filesystem::path> &checkpoints);

} // namespace prereg::grade
