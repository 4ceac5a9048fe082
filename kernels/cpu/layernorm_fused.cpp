// CPU arm layernorm.fused: one sweep per row with two-pass statistics (shifted mean, then the
// mean of squared deviations); the backward reads each row once and accumulates
// dgamma/dbeta in cascaded fp32 partial sums from the step_allocator.
#include "cpu/norm_common.hpp"

#include <cmath>

namespace prereg::cpu {
namespace {

constexpr const char *arm_name = "layernorm.fused";

void forward(const norm_tensors &t, step_allocator & /*alloc*/, void * /*stream*/) {
  require_fp32(t, arm_name);
  require_buffers(t, operation::layernorm, false, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols;
  const auto *gamma = static_cast<const float *>(t.gamma);
  const auto *beta = static_cast<const float *>(t.beta);
  const auto eps = static_cast<float>(norm_eps(operation::layernorm));
  const auto inv_cols = 1.0f / static_cast<float>(cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float *x = static_cast<const float *>(t.x) + r * cols;
    float *y = static_cast<float *>(t.y) + r * cols;
    // Shifted by the row's first element, so the sum stays small when |mean| >> std.
    const float x0 = x[0];
    const float mean = x0 + blocked_sum(cols, [&](std::int64_t j) { return x[j] - x0; }) * inv_cols;
    const float var = blocked_sum(cols,
                                  [&](std::int64_t j) {
                                    const float d = x[j] - mean;
                                    return d * d;
                                  }) *
                      inv_cols;
    const float rstd = 1.0f / std::sqrt(var + eps);
    for (std::int64_t j = 0; j < cols; ++j)
      y[j] = (x[j] - mean) * rstd * gamma[j] + beta[j];
    t.mean[r] = mean;
    t.rstd[r] = rstd;
  }
}

void backward(const norm_tensors &t, step_allocator &alloc, void * /*stream*/) {
  require_fp32(t, arm_name);
  require_buffers(t, operation::layernorm, true, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols;
  const auto *gamma = static_cast<const float *>(t.gamma);
  const auto inv_cols = 1.0f / static_cast<float>(cols);
  column_cascade dgamma(alloc, rows, cols);
  column_cascade dbeta(alloc, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float *x = static_cast<const float *>(t.x) + r * cols;
    const float *dy = static_cast<const float *>(t.dy) + r * cols;
    float *dx = static_cast<float *>(t.dx) + r * cols;
    const float mean = t.mean[r], rstd = t.rstd[r];
    float *dg = dgamma.row();
    float *db = dbeta.row();
    const auto [s1, s2] = blocked_sum2(cols, [&](std::int64_t j) {
      const float xhat = (x[j] - mean) * rstd;
      const float dxhat = dy[j] * gamma[j];
      dg[j] += dy[j] * xhat;
      db[j] += dy[j];
      return std::pair<float, float>{dxhat, dxhat * xhat};
    });
    dgamma.end_row();
    dbeta.end_row();
    const float m1 = s1 * inv_cols, m2 = s2 * inv_cols;
    for (std::int64_t j = 0; j < cols; ++j) {
      const float xhat = (x[j] - mean) * rstd;
      dx[j] = rstd * (dy[j] * gamma[j] - m1 - xhat * m2);
    }
  }
  dgamma.finish(static_cast<float *>(t.dgamma));
  dbeta.finish(static_cast<float *>(t.dbeta));
}

} // namespace

const arm_ops layernorm_fused_ops{&forward, &backward};

} // namespace prereg::cpu
