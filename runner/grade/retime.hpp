// The re-timings (docs/grading.md, "The re-timing"): after a first process that excludes
// nothing, a second fresh process re-times the cell of its largest speed-up; one that fails the
// factor rule alone is repeated, after a pause, up to retime_attempts. The loop the grading's
// parts and the reward share; each caller runs its own processes.
#pragma once

#include "grade/score.hpp"

#include <chrono>
#include <cstddef>
#include <functional>

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

} // namespace prereg::grade
