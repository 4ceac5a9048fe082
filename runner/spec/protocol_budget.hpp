// The time a protocol takes at the very least, to refuse one that could never finish
// (docs/hardening.md): the measuring and the analysis's lower bounds.
#pragma once

#include "spec/protocol.hpp"

#include <cstdint>
#include <string>

namespace prereg::protocol_detail {

/// The most timed and warm-up invocations: cells x (repetitions + warmup) x repeat.
inline constexpr std::int64_t max_invocations = 100000000;
/// The longest a protocol may take to measure, or its analysis to run [s]: 30 days.
inline constexpr double max_estimated_s = 30 * 86400.0;
/// Each bootstrap resample draws every sample of every involved arm at every selected cell;
/// drawing one takes at least 1 ns [s].
inline constexpr double assumed_resample_s = 1e-9;

/// "45 seconds", "3 minutes", ..., "1.2e+03 years".
[[nodiscard]] std::string human_duration(double s);
/// The lower bound on the time measuring `p` takes [s].
[[nodiscard]] double estimated_seconds(const protocol &p);
/// "at the very least ... (assuming 1 us per invocation and ... TB/s, flushes not counted)".
[[nodiscard]] std::string estimate_text(const protocol &p);

} // namespace prereg::protocol_detail
