// The re-timings (docs/grading.md, "The re-timing"): after a first process that excludes
// nothing, a second fresh process re-times the cell of its largest speed-up; one that fails the
// factor rule alone is repeated, after a pause, up to retime_attempts. The loop the grading's
// parts and the reward share; each caller runs its own processes.
#pragma once

#include "base/json.hpp"
#include "grade/score.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

namespace prereg::grade {

/// The pause before a repeated re-timing: a stretch of a busy machine may pass.
inline constexpr std::chrono::milliseconds retime_pause{3000};

/// Runs re-timings of `first` (a first process that excludes nothing) until retime_again says
/// stop: `attempt(i, cell)` runs re-timing i (0-based) of `cell` in a fresh process and returns
/// it (alive until the loop's caller is done). Returns how many ran.
std::size_t
retime_until(const protocol &task, const report_document &baseline, const graded_run &first,
             const std::function<const retime_run *(std::size_t, const cell_key &)> &attempt,
             std::chrono::milliseconds pause = retime_pause);

/// The JSON form of re-timings in the order they ran (a grading part's and leaderboard entry's
/// `retime`, the reward's): the last one, the earlier ones under its `earlier` when there are
/// any (so that one re-timing has the form it had before re-timings were repeated); null for
/// none.
[[nodiscard]] json nest_retimes(std::vector<json> in_order);
/// nest_retimes of re-timings in the order they ran, each with what `sc` judged of it (`first`,
/// `second`, `factor`, `confirmed`; null where it judged none): the leaderboard's and the
/// reward's `retime`.
[[nodiscard]] json judged_retimes(std::vector<json> in_order, const entry_score &sc);
/// The re-timings of such a `retime` in the order they ran (none for null).
[[nodiscard]] std::vector<json> flat_retimes(const json &retime);

} // namespace prereg::grade
