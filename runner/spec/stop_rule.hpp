// The stopping rule of a prereg: 2 protocol (docs/protocol.md, `measurement.stop`): when a cell's
// samples are precise enough, and the replay of that decision from the raw samples, shared by the
// engine (which stops) and the audit (which checks the count).
#pragma once

#include "spec/protocol.hpp"
#include "spec/records.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace prereg {

/// Bootstrap resamples of one precision check (fixed, so that the audit replays it).
inline constexpr std::int64_t stop_resamples = 1000;

/// The bootstrap interval of the median of the first n samples.
struct stop_precision {
  double median_ms = 0;
  double lo_ms = 0;
  double hi_ms = 0;
  double rel_ci = 0; ///< max(median - lo, hi - median) / median (NaN for a zero median)
};

/// The generator seed of a cell's checks: stream_seed(plan_seed, bootstrap) ^ FNV-1a 64 of
/// cell_label(k), where plan_seed is seed_from_hash(protocol hash) (the run's plan seed).
[[nodiscard]] std::uint64_t stop_seed(std::uint64_t plan_seed, const cell_key &k);

/// The percentile-bootstrap interval (at `confidence`) of the median of `samples` (n >= 2):
/// stop_resamples resamples, each n ranks of the sorted samples drawn by
/// rng(seed ^ n x 0x9e3779b97f4a7c15).below(n), and the R-7 median of each.
[[nodiscard]] stop_precision stop_check(std::span<const double> samples, double confidence,
                                        std::uint64_t seed);

/// Whether the rule stops after these samples for precision: n >= min (and >= 2) and
/// rel_ci <= rule.rel_ci.
[[nodiscard]] bool precise_enough(const stop_spec &rule, const stop_precision &p, std::size_t n);

/// Why a cell's sample count and stop record do not follow the rule, replayed from its samples
/// (docs/audit.md, "stop"); empty when they do. `failed`: the cell has an error.
[[nodiscard]] std::string stop_replay_problem(const stop_spec &rule, double confidence,
                                              std::uint64_t seed, std::span<const double> samples,
                                              const stop_record &rec, bool failed);

} // namespace prereg
