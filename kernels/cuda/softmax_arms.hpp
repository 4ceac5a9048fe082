// The CUDA softmax arms' entry points (generic seam) and the argument check they share
// (host-only: includes no CUDA header).
#pragma once

#include "prereg/arm.hpp"
#include "prereg/error.hpp"
#include "prereg/ops/softmax.hpp"

#include <cstdint>
#include <string>

namespace prereg::cuda {

/// softmax.unfused (kernels/cuda/softmax_unfused.cu): one kernel per elementary operation.
extern const arm_entry softmax_unfused_entry;
/// softmax.fused (kernels/cuda/softmax_fused.cu): one kernel per pass, the row in registers.
extern const arm_entry softmax_fused_entry;

/// Every softmax arm on CUDA reads and writes rows in 16-byte vectors: cols must be a multiple
/// of this (8 elements of fp16/bf16; two vectors of fp32).
inline constexpr std::int64_t softmax_cols_multiple = 8;

/// Throws invalid_input unless `t` is a softmax invocation with rows >= 1,
/// 1 <= cols <= max_cols, cols a multiple of softmax_cols_multiple, and every buffer its pass
/// touches (x, y forward; y, dy, dx backward) set and 16-byte aligned.
inline void require_softmax(const tensor_args &t, bool backward, std::int64_t max_cols,
                            const char *arm) {
  if (t.rows < 1 || t.cols < 1 || t.cols > max_cols || t.cols % softmax_cols_multiple != 0)
    throw invalid_input(std::string(arm) + ": needs rows >= 1 and cols in [8, " +
                        std::to_string(max_cols) + "], a multiple of 8 (got " +
                        std::to_string(t.rows) + " x " + std::to_string(t.cols) + ")");
  const auto usable = [&](std::size_t i) {
    return t.data[i] != nullptr && reinterpret_cast<std::uintptr_t>(t.data[i]) % 16 == 0;
  };
  bool ok = t.data != nullptr && t.count > softmax::dx;
  if (ok && !backward)
    ok = usable(softmax::x) && usable(softmax::y);
  if (ok && backward)
    ok = usable(softmax::y) && usable(softmax::dy) && usable(softmax::dx);
  if (!ok)
    throw invalid_input(std::string(arm) + ": a buffer it needs is null or not 16-byte aligned");
}

} // namespace prereg::cuda
