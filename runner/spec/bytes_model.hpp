// The bytes model: bytes an invocation must move, and the GB/s and % of ceiling derived from a
// time (docs/analysis.md, "Bytes model").
#pragma once

#include "spec/records.hpp"

#include "prereg/arm.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace prereg {

/// Bytes one invocation of `op` must read plus write for a [rows, cols] input of `type`
/// (statistics are fp32, 4 bytes). Throws `error` (exit 2) for a negative shape or overflow.
[[nodiscard]] std::uint64_t bytes_per_invocation(const std::string &op, dtype type, pass_kind pass,
                                                 std::int64_t rows, std::int64_t cols);
/// Bytes one timed step moves: `repeat` invocations (repeat >= 1).
[[nodiscard]] std::uint64_t bytes_per_step(const std::string &op, dtype type, pass_kind pass,
                                           std::int64_t rows, std::int64_t cols,
                                           std::int64_t repeat);
/// Bytes one timed step of cell `k` moves (its pass and shape, named axes included).
[[nodiscard]] std::uint64_t bytes_per_step(const std::string &op, dtype type, const cell_key &k,
                                           std::int64_t repeat);
/// The reads and writes of one timed step of cell `k` (docs/operations.md, "Reads and
/// writes"): `repeat` x the operation's split; read + write = bytes_per_step.
[[nodiscard]] op_traffic traffic_per_step(const std::string &op, dtype type, const cell_key &k,
                                          std::int64_t repeat);
/// FLOPs of one timed step of cell `k`: `repeat` x the pass's declared flops formula, or
/// nullopt where the operation declares none.
[[nodiscard]] std::optional<std::uint64_t> flops_per_step(const std::string &op, dtype type,
                                                          const cell_key &k, std::int64_t repeat);
/// The compute ceiling a cell of `pass` is judged against (operation_desc::compute_type).
[[nodiscard]] std::string compute_type(const std::string &op, dtype type, pass_kind pass);
/// bytes / (time_ms * 1e-3) / 1e9 [GB/s]; NaN unless time_ms > 0 and finite.
[[nodiscard]] double gbps(std::uint64_t bytes, double time_ms);
/// 100 * gbps / ceiling_gbps [%]; NaN unless ceiling_gbps > 0 and finite.
[[nodiscard]] double pct_ceiling(double gbps, double ceiling_gbps);
/// flops / (time_ms * 1e-3) / 1e12 [TFLOP/s]; NaN unless time_ms > 0 and finite.
[[nodiscard]] double tflops(std::uint64_t flops, double time_ms);

} // namespace prereg
