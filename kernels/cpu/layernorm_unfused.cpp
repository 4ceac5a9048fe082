// CPU arm layernorm.unfused: LayerNorm as a chain of eager operations, each one full pass over
// the data into a fresh intermediate from the step_allocator, freed after its last use.
#include "cpu/eager_ops.hpp"
#include "cpu/norm_common.hpp"

namespace prereg::cpu {
namespace {

constexpr const char *arm_name = "layernorm.unfused";

void forward(const norm_tensors &t, step_allocator &alloc, void * /*stream*/) {
  require_fp32(t, arm_name);
  require_buffers(t, operation::layernorm, false, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols, n = rows * cols;
  const auto *x = static_cast<const float *>(t.x);
  const auto *gamma = static_cast<const float *>(t.gamma);
  const auto *beta = static_cast<const float *>(t.beta);
  const auto eps = static_cast<float>(norm_eps(operation::layernorm));

  scratch mean(alloc, rows);
  eager::row_mean(x, rows, cols, mean.data());
  scratch xc(alloc, n);
  eager::sub_rowvec(x, mean.data(), rows, cols, xc.data());
  scratch sq(alloc, n);
  eager::mul(xc.data(), xc.data(), n, sq.data());
  scratch var(alloc, rows);
  eager::row_mean(sq.data(), rows, cols, var.data());
  sq.release();
  scratch var_eps(alloc, rows);
  eager::add_scalar(var.data(), eps, rows, var_eps.data());
  var.release();
  scratch rstd(alloc, rows);
  eager::rsqrt(var_eps.data(), rows, rstd.data());
  var_eps.release();
  scratch xhat(alloc, n);
  eager::mul_rowvec(xc.data(), rstd.data(), rows, cols, xhat.data());
  xc.release();
  scratch scaled(alloc, n);
  eager::mul_colvec(xhat.data(), gamma, rows, cols, scaled.data());
  xhat.release();
  eager::add_colvec(scaled.data(), beta, rows, cols, static_cast<float *>(t.y));
  scaled.release();
  // Saved for the backward.
  eager::copy(mean.data(), rows, t.mean);
  eager::copy(rstd.data(), rows, t.rstd);
}

void backward(const norm_tensors &t, step_allocator &alloc, void * /*stream*/) {
  require_fp32(t, arm_name);
  require_buffers(t, operation::layernorm, true, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols, n = rows * cols;
  const auto *x = static_cast<const float *>(t.x);
  const auto *gamma = static_cast<const float *>(t.gamma);
  const auto *dy = static_cast<const float *>(t.dy);

  scratch xc(alloc, n);
  eager::sub_rowvec(x, t.mean, rows, cols, xc.data());
  scratch xhat(alloc, n);
  eager::mul_rowvec(xc.data(), t.rstd, rows, cols, xhat.data());
  xc.release();
  eager::column_sum(alloc, dy, rows, cols, static_cast<float *>(t.dbeta));
  scratch dy_xhat(alloc, n);
  eager::mul(dy, xhat.data(), n, dy_xhat.data());
  eager::column_sum(alloc, dy_xhat.data(), rows, cols, static_cast<float *>(t.dgamma));
  dy_xhat.release();
  scratch dxhat(alloc, n);
  eager::mul_colvec(dy, gamma, rows, cols, dxhat.data());
  scratch m1(alloc, rows);
  eager::row_mean(dxhat.data(), rows, cols, m1.data());
  scratch p(alloc, n);
  eager::mul(dxhat.data(), xhat.data(), n, p.data());
  scratch m2(alloc, rows);
  eager::row_mean(p.data(), rows, cols, m2.data());
  p.release();
  scratch t1(alloc, n);
  eager::sub_rowvec(dxhat.data(), m1.data(), rows, cols, t1.data());
  dxhat.release();
  m1.release();
  scratch t2(alloc, n);
  eager::mul_rowvec(xhat.data(), m2.data(), rows, cols, t2.data());
  xhat.release();
  m2.release();
  scratch t3(alloc, n);
  eager::sub(t1.data(), t2.data(), n, t3.data());
  t1.release();
  t2.release();
  eager::mul_rowvec(t3.data(), t.rstd, rows, cols, static_cast<float *>(t.dx));
}

} // namespace

const arm_ops layernorm_unfused_ops{&forward, &backward};

} // namespace prereg::cpu
