// CPU arm rmsnorm.unfused: RMSNorm as a chain of eager operations, each one full pass over the
// data into a fresh intermediate from the step_allocator, freed after its last use.
#include "cpu/eager_ops.hpp"
#include "cpu/norm_common.hpp"

namespace prereg::cpu {
namespace {

constexpr const char *arm_name = "rmsnorm.unfused";

void forward(const norm_tensors &t, step_allocator &alloc, void * /*stream*/) {
  require_fp32(t, arm_name);
  require_buffers(t, operation::rmsnorm, false, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols, n = rows * cols;
  const auto *x = static_cast<const float *>(t.x);
  const auto *w = static_cast<const float *>(t.gamma);
  const auto eps = static_cast<float>(norm_eps(operation::rmsnorm));

  scratch sq(alloc, n);
  eager::mul(x, x, n, sq.data());
  scratch ms(alloc, rows);
  eager::row_mean(sq.data(), rows, cols, ms.data());
  sq.release();
  scratch ms_eps(alloc, rows);
  eager::add_scalar(ms.data(), eps, rows, ms_eps.data());
  ms.release();
  scratch rstd(alloc, rows);
  eager::rsqrt(ms_eps.data(), rows, rstd.data());
  ms_eps.release();
  scratch xn(alloc, n);
  eager::mul_rowvec(x, rstd.data(), rows, cols, xn.data());
  eager::mul_colvec(xn.data(), w, rows, cols, static_cast<float *>(t.y));
  xn.release();
  eager::copy(rstd.data(), rows, t.rstd); // saved for the backward
}

void backward(const norm_tensors &t, step_allocator &alloc, void * /*stream*/) {
  require_fp32(t, arm_name);
  require_buffers(t, operation::rmsnorm, true, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols, n = rows * cols;
  const auto *x = static_cast<const float *>(t.x);
  const auto *w = static_cast<const float *>(t.gamma);
  const auto *dy = static_cast<const float *>(t.dy);

  scratch xn(alloc, n);
  eager::mul_rowvec(x, t.rstd, rows, cols, xn.data());
  scratch q(alloc, n);
  eager::mul(dy, xn.data(), n, q.data());
  xn.release();
  eager::column_sum(alloc, q.data(), rows, cols, static_cast<float *>(t.dgamma));
  q.release();
  scratch dyw(alloc, n);
  eager::mul_colvec(dy, w, rows, cols, dyw.data());
  scratch p(alloc, n);
  eager::mul(dyw.data(), x, n, p.data());
  scratch m(alloc, rows);
  eager::row_mean(p.data(), rows, cols, m.data());
  p.release();
  scratch r2(alloc, rows);
  eager::mul(t.rstd, t.rstd, rows, r2.data());
  scratch c(alloc, rows);
  eager::mul(m.data(), r2.data(), rows, c.data());
  m.release();
  r2.release();
  scratch xc(alloc, n);
  eager::mul_rowvec(x, c.data(), rows, cols, xc.data());
  c.release();
  scratch u(alloc, n);
  eager::sub(dyw.data(), xc.data(), n, u.data());
  dyw.release();
  xc.release();
  eager::mul_rowvec(u.data(), t.rstd, rows, cols, static_cast<float *>(t.dx));
}

} // namespace

const arm_ops rmsnorm_unfused_ops{&forward, &backward};

} // namespace prereg::cpu
