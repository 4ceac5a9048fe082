// CPU arm softmax.fused: one row at a time while it stays in cache. The forward takes the
// row's max, writes exp(x - max) into y while summing it (blocked fp32), then scales y by
// 1 / sum; the backward sums dy * y over the row and writes dx = y * (dy - sum). No scratch.
#include "cpu/norm_common.hpp"
#include "cpu/softmax_arms.hpp"

#include <algorithm>
#include <cmath>

namespace prereg::cpu {
namespace {

constexpr const char *arm_name = "softmax.fused";

void forward(const tensor_args &t, step_allocator & /*alloc*/, void * /*stream*/) {
  require_softmax(t, false, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float *x = t.get<const float>(softmax::x) + r * cols;
    float *y = t.get<float>(softmax::y) + r * cols;
    float m = x[0];
    for (std::int64_t j = 1; j < cols; ++j)
      m = std::max(m, x[j]);
    const float sum = blocked_sum(cols, [&](std::int64_t j) {
      const float e = std::exp(x[j] - m);
      y[j] = e;
      return e;
    });
    const float inv = 1.0f / sum;
    for (std::int64_t j = 0; j < cols; ++j)
      y[j] *= inv;
  }
}

void backward(const tensor_args &t, step_allocator & /*alloc*/, void * /*stream*/) {
  require_softmax(t, true, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float *y = t.get<const float>(softmax::y) + r * cols;
    const float *dy = t.get<const float>(softmax::dy) + r * cols;
    float *dx = t.get<float>(softmax::dx) + r * cols;
    const float dot = blocked_sum(cols, [&](std::int64_t j) { return dy[j] * y[j]; });
    for (std::int64_t j = 0; j < cols; ++j)
      dx[j] = y[j] * (dy[j] - dot);
  }
}

} // namespace

const arm_entry softmax_fused_entry{&forward, &backward};

} // namespace prereg::cpu
