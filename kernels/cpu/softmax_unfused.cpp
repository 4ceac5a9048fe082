// CPU arm softmax.unfused: softmax as a chain of eager operations, each one full pass over
// the data into a fresh intermediate from the step_allocator, freed after its last use.
//   forward:  m = rowmax(x); d = x - m; e = exp(d); s = rowsum(e); y = e / s
//   backward: p = dy * y; g = rowsum(p); q = dy - g; dx = y * q
#include "cpu/eager_ops.hpp"
#include "cpu/norm_common.hpp"
#include "cpu/softmax_arms.hpp"

#include <algorithm>
#include <cmath>

namespace prereg::cpu {
namespace {

constexpr const char *arm_name = "softmax.unfused";

// The elementary operations eager_ops.hpp lacks, in the same style.

/// out[r] = max of a[r, :].
void row_max(const float *a, std::int64_t rows, std::int64_t cols, float *out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float *ar = a + r * cols;
    float m = ar[0];
    for (std::int64_t c = 1; c < cols; ++c)
      m = std::max(m, ar[c]);
    out[r] = m;
  }
}

/// out[r] = sum of a[r, :] (blocked fp32).
void row_sum(const float *a, std::int64_t rows, std::int64_t cols, float *out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float *ar = a + r * cols;
    out[r] = blocked_sum(cols, [ar](std::int64_t j) { return ar[j]; });
  }
}

/// out[i] = exp(a[i]).
void elementwise_exp(const float *a, std::int64_t n, float *out) {
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = std::exp(a[i]);
}

/// out[r, c] = a[r, c] / v[r].
void div_rowvec(const float *a, const float *v, std::int64_t rows, std::int64_t cols, float *out) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = a[r * cols + c] / v[r];
}

void forward(const tensor_args &t, step_allocator &alloc, void * /*stream*/) {
  require_softmax(t, false, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols, n = rows * cols;
  const auto *x = t.get<const float>(softmax::x);

  scratch m(alloc, rows);
  row_max(x, rows, cols, m.data());
  scratch d(alloc, n);
  eager::sub_rowvec(x, m.data(), rows, cols, d.data());
  m.release();
  scratch e(alloc, n);
  elementwise_exp(d.data(), n, e.data());
  d.release();
  scratch s(alloc, rows);
  row_sum(e.data(), rows, cols, s.data());
  div_rowvec(e.data(), s.data(), rows, cols, t.get<float>(softmax::y));
}

void backward(const tensor_args &t, step_allocator &alloc, void * /*stream*/) {
  require_softmax(t, true, arm_name);
  const std::int64_t rows = t.rows, cols = t.cols, n = rows * cols;
  const auto *y = t.get<const float>(softmax::y);
  const auto *dy = t.get<const float>(softmax::dy);

  scratch p(alloc, n);
  eager::mul(dy, y, n, p.data());
  scratch g(alloc, rows);
  row_sum(p.data(), rows, cols, g.data());
  p.release();
  scratch q(alloc, n);
  eager::sub_rowvec(dy, g.data(), rows, cols, q.data());
  g.release();
  eager::mul(y, q.data(), n, t.get<float>(softmax::dx));
}

} // namespace

const arm_entry softmax_unfused_entry{&forward, &backward};

} // namespace prereg::cpu
