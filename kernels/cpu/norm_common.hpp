// Shared by the CPU arms: the arms' entry points, fp32 blocked row sums, the cascade column
// accumulator, and step scratch buffers billed through the step_allocator.
#pragma once

#include "prereg/arm.hpp"
#include "prereg/error.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

namespace prereg::cpu {

/// The four CPU arms (one source file each).
extern const arm_ops layernorm_unfused_ops;
extern const arm_ops layernorm_fused_ops;
extern const arm_ops rmsnorm_unfused_ops;
extern const arm_ops rmsnorm_fused_ops;

/// Throws unless `t` is an fp32 invocation of at least one element (CPU arms are fp32 only).
inline void require_fp32(const norm_tensors &t, const char *arm) {
  if (t.type != dtype::fp32 || t.rows < 1 || t.cols < 1)
    throw invalid_input(std::string(arm) + ": needs fp32 and rows, cols >= 1");
}

/// Elements per block of a row sum: blocks are summed alone, then added to the total, so the
/// fp32 rounding error grows with block + cols/block terms instead of cols.
inline constexpr std::int64_t sum_block = 128;

/// Sum of f(j) for j in [0, n) in fp32, blocked (see sum_block).
template <class F> [[nodiscard]] inline float blocked_sum(std::int64_t n, F f) {
  float total = 0.0f;
  for (std::int64_t b = 0; b < n; b += sum_block) {
    const std::int64_t e = std::min(n, b + sum_block);
    float part = 0.0f;
    for (std::int64_t j = b; j < e; ++j)
      part += f(j);
    total += part;
  }
  return total;
}

/// The two sums of f(j) = {a, b} for j in [0, n) in fp32, blocked like blocked_sum.
template <class F> [[nodiscard]] inline std::pair<float, float> blocked_sum2(std::int64_t n, F f) {
  float total_a = 0.0f, total_b = 0.0f;
  for (std::int64_t b = 0; b < n; b += sum_block) {
    const std::int64_t e = std::min(n, b + sum_block);
    float part_a = 0.0f, part_b = 0.0f;
    for (std::int64_t j = b; j < e; ++j) {
      const auto [a, bb] = f(j);
      part_a += a;
      part_b += bb;
    }
    total_a += part_a;
    total_b += part_b;
  }
  return {total_a, total_b};
}

/// Throws unless every buffer the forward (and, if asked, the backward) of `op` uses is set.
inline void require_buffers(const norm_tensors &t, operation op, bool backward, const char *arm) {
  const bool ln = op == operation::layernorm;
  bool ok = t.x != nullptr && t.gamma != nullptr && (!ln || t.beta != nullptr) &&
            t.rstd != nullptr && (!ln || t.mean != nullptr);
  if (backward)
    ok = ok && t.dy != nullptr && t.dx != nullptr && t.dgamma != nullptr &&
         (!ln || t.dbeta != nullptr);
  else
    ok = ok && t.y != nullptr;
  if (!ok)
    throw invalid_input(std::string(arm) + ": a buffer it needs is null");
}

/// `n` floats from the step_allocator, released at scope end (or by release()).
class scratch {
public:
  scratch(step_allocator &alloc, std::size_t n)
      : m_alloc(&alloc), m_data(static_cast<float *>(alloc.allocate(n * sizeof(float)))) {}
  scratch(const scratch &) = delete;
  scratch &operator=(const scratch &) = delete;
  scratch(scratch &&o) noexcept : m_alloc(o.m_alloc), m_data(std::exchange(o.m_data, nullptr)) {}
  scratch &operator=(scratch &&) = delete;
  ~scratch() { release(); }
  /// Gives the memory back now (the buffer is dead from here on).
  void release() noexcept {
    if (m_data != nullptr)
      m_alloc->release(std::exchange(m_data, nullptr));
  }
  /// The buffer.
  [[nodiscard]] float *data() const noexcept { return m_data; }

private:
  step_allocator *m_alloc;
  float *m_data;
};

/// Rows accumulated into a [cols] level 0 that is added into level 1 (and cleared) every
/// cascade_width rows, level 1 into level 2 every cascade_width of those, and so on: each fp32
/// partial sum holds at most cascade_width terms. Levels live in one scratch buffer.
class column_cascade {
public:
  /// Terms per partial sum before it carries into the next level.
  static constexpr std::int64_t cascade_width = 32;

  column_cascade(step_allocator &alloc, std::int64_t rows, std::int64_t cols)
      : m_cols(cols), m_levels(levels_for(rows)),
        m_data(alloc, static_cast<std::size_t>(m_levels * cols)) {
    std::fill_n(m_data.data(), m_levels * cols, 0.0f);
    std::fill_n(m_count, max_levels, 0);
  }
  /// Level 0: add this row's [cols] terms here, then call end_row().
  [[nodiscard]] float *row() const noexcept { return m_data.data(); }
  /// Closes a row: carries full levels upward.
  void end_row() noexcept {
    for (int k = 0; k + 1 < m_levels; ++k) {
      if (++m_count[k] < cascade_width)
        return;
      float *lo = m_data.data() + k * m_cols;
      float *hi = lo + m_cols;
      for (std::int64_t j = 0; j < m_cols; ++j) {
        hi[j] += lo[j];
        lo[j] = 0.0f;
      }
      m_count[k] = 0;
    }
  }
  /// out[j] = the column sum: every level added, lowest first.
  void finish(float *out) const noexcept {
    for (std::int64_t j = 0; j < m_cols; ++j) {
      float s = 0.0f;
      for (int k = 0; k < m_levels; ++k)
        s += m_data.data()[k * m_cols + j];
      out[j] = s;
    }
  }

private:
  static constexpr int max_levels = 13; // 32^13 > 2^63
  static int levels_for(std::int64_t rows) {
    int levels = 1;
    for (std::int64_t cap = cascade_width; cap < rows && levels < max_levels; cap *= cascade_width)
      ++levels;
    return levels;
  }
  std::int64_t m_cols;
  int m_levels;
  scratch m_data;
  std::int64_t m_count[max_levels];
};

} // namespace prereg::cpu
