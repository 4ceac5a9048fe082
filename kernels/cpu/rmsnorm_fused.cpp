// CPU arm rmsnorm.fused: one sweep per row; the backward reads each row once and accumulates
// dweight in cascaded fp32 partial sums from the step_allocator.
#include "cpu/norm_common.hpp"

#include <cmath>

namespace prereg::cpu {
namespace {

constexpr const char *arm_name = "rmsnorm.fused";

void forward(const norm_tensors &t, step_allocator & /*alloc*/, void * /*stream*/) {
  require_fp32(t, arm_name);
  require_buffers(t, operation::rmsnorm, false, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols;
  const auto *w = static_cast<const float *>(t.gamma);
  const auto eps = static_cast<float>(norm_eps(operation::rmsnorm));
  const auto inv_cols = 1.0f / static_cast<float>(cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float *x = static_cast<const float *>(t.x) + r * cols;
    float *y = static_cast<float *>(t.y) + r * cols;
    const float ms = blocked_sum(cols, [&](std::int64_t j) { return x[j] * x[j]; }) * inv_cols;
    const float rstd = 1.0f / std::sqrt(ms + eps);
    for (std::int64_t j = 0; j < cols; ++j)
      y[j] = x[j] * rstd * w[j];
    t.rstd[r] = rstd;
  }
}

void backward(const norm_tensors &t, step_allocator &alloc, void * /*stream*/) {
  require_fp32(t, arm_name);
  require_buffers(t, operation::rmsnorm, true, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols;
  const auto *w = static_cast<const float *>(t.gamma);
  const auto inv_cols = 1.0f / static_cast<float>(cols);
  column_cascade dw(alloc, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float *x = static_cast<const float *>(t.x) + r * cols;
    const float *dy = static_cast<const float *>(t.dy) + r * cols;
    float *dx = static_cast<float *>(t.dx) + r * cols;
    const float rstd = t.rstd[r];
    float *acc = dw.row();
    const float s = blocked_sum(cols, [&](std::int64_t j) {
      acc[j] += dy[j] * x[j] * rstd;
      return dy[j] * w[j] * x[j];
    });
    dw.end_row();
    const float c = rstd * rstd * (s * inv_cols);
    for (std::int64_t j = 0; j < cols; ++j)
      dx[j] = rstd * (dy[j] * w[j] - x[j] * c);
  }
  dw.finish(static_cast<float *>(t.dgamma));
}

} // namespace

const arm_ops rmsnorm_fused_ops{&forward, &backward};

} // namespace prereg::cpu
