// The CPU softmax arms' entry points (generic seam) and the argument check they share.
#pragma once

#include "prereg/arm.hpp"
#include "prereg/error.hpp"
#include "prereg/ops/softmax.hpp"

#include <string>

namespace prereg::cpu {

/// softmax.unfused (kernels/cpu/softmax_unfused.cpp): eager style, one sweep per elementary op.
extern const arm_entry softmax_unfused_entry;
/// softmax.fused (kernels/cpu/softmax_fused.cpp): one row at a time, kept in cache.
extern const arm_entry softmax_fused_entry;

/// Throws invalid_input unless `t` is an fp32 softmax invocation of at least one element with
/// every buffer its pass touches set: x, y for the forward; y, dy, dx for the backward.
inline void require_softmax(const tensor_args &t, bool backward, const char *arm) {
  if (t.type != dtype::fp32 || t.rows < 1 || t.cols < 1)
    throw invalid_input(std::string(arm) + ": needs fp32 and rows, cols >= 1");
  bool ok = t.data != nullptr && t.count > softmax::dx;
  if (ok && !backward)
    ok = t.data[softmax::x] != nullptr && t.data[softmax::y] != nullptr;
  if (ok && backward)
    ok = t.data[softmax::y] != nullptr && t.data[softmax::dy] != nullptr &&
         t.data[softmax::dx] != nullptr;
  if (!ok)
    throw invalid_input(std::string(arm) + ": a buffer it needs is null");
}

} // namespace prereg::cpu
