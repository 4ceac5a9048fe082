// The elementary operations of the unfused CPU arms, eager style: each is one full pass over
// its inputs into an output buffer, as a framework's eager kernel would be.
#pragma once

#include "cpu/norm_common.hpp"

#include <cmath>
#include <cstdint>

namespace prereg::cpu::eager {

/// out[r] = mean of a[r, :].
inline void row_mean(const float *a, std::int64_t rows, std::int64_t cols, float *out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float *ar = a + r * cols;
    out[r] = blocked_sum(cols, [ar](std::int64_t j) { return ar[j]; }) / static_cast<float>(cols);
  }
}

/// out[r, c] = a[r, c] - v[r].
inline void sub_rowvec(const float *a, const float *v, std::int64_t rows, std::int64_t cols,
                       float *out) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = a[r * cols + c] - v[r];
}

/// out[r, c] = a[r, c] * v[r].
inline void mul_rowvec(const float *a, const float *v, std::int64_t rows, std::int64_t cols,
                       float *out) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = a[r * cols + c] * v[r];
}

/// out[r, c] = a[r, c] * g[c].
inline void mul_colvec(const float *a, const float *g, std::int64_t rows, std::int64_t cols,
                       float *out) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = a[r * cols + c] * g[c];
}

/// out[r, c] = a[r, c] + b[c].
inline void add_colvec(const float *a, const float *b, std::int64_t rows, std::int64_t cols,
                       float *out) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = a[r * cols + c] + b[c];
}

/// out[i] = a[i] * b[i].
inline void mul(const float *a, const float *b, std::int64_t n, float *out) {
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = a[i] * b[i];
}

/// out[i] = a[i] - b[i].
inline void sub(const float *a, const float *b, std::int64_t n, float *out) {
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = a[i] - b[i];
}

/// out[i] = a[i] + s.
inline void add_scalar(const float *a, float s, std::int64_t n, float *out) {
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = a[i] + s;
}

/// out[i] = 1 / sqrt(a[i]).
inline void rsqrt(const float *a, std::int64_t n, float *out) {
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = 1.0f / std::sqrt(a[i]);
}

/// out[i] = a[i].
inline void copy(const float *a, std::int64_t n, float *out) {
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = a[i];
}

/// out[c] = sum over rows of a[r, c] (a cascade of fp32 partial sums from the allocator).
inline void column_sum(step_allocator &alloc, const float *a, std::int64_t rows, std::int64_t cols,
                       float *out) {
  column_cascade acc(alloc, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    float *level0 = acc.row();
    for (std::int64_t c = 0; c < cols; ++c)
      level0[c] += a[r * cols + c];
    acc.end_row();
  }
  acc.finish(out);
}

} // namespace prereg::cpu::eager
