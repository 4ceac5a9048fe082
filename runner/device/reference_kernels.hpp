// The float64 references, the checked inputs' fill and the output comparison on a CUDA device
// (docs/engine.md, "What is computed where"), callable from host C++ (cuda_reference.cpp).
#pragma once

#include "prereg/arm.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace prereg::cuda {

/// Fills n elements of `type` for a checked call: element i is
/// round(offset(row) + lo + (hi - lo) * u(seed, i, attempt)) to `type`, the first attempt
/// (0, 1, ...) that does not round to zero; u is splitmix64 of seed + (4 i + attempt + 1) *
/// golden, top 53 bits; offset(row) = -row_offset + 2 row_offset u(seed ^ row_key, row, 0) for
/// rows of `row_len` elements when row_len > 0, else 0. Never a zero.
void launch_checked_fill(void *p, std::size_t n, dtype type, double lo, double hi,
                         double row_offset, std::int64_t row_len, std::uint64_t seed,
                         cudaStream_t stream);

/// Fills n elements of an fp8, integer or bool `type` (docs/engine.md): u(k, i) is splitmix64 of
/// seed + k * 0x632be59bd9b4e019 + (i + 1) * golden, top 53 bits; an integer is
/// min(lo + floor(u(0, i) (hi - lo)), hi - 1) for [lo, hi); an fp8 value is the first of
/// fp8_inside(lo + (hi - lo) u(k, i)), k = 0 .. 63, that is not zero, else `fallback`. The timed
/// windows' fresh inputs and the checked calls' both.
void launch_typed_fill(void *p, std::size_t n, dtype type, double lo, double hi, double fallback,
                       std::uint64_t seed, cudaStream_t stream);

/// The float64 tensors of a normalisation's reference (null where unused).
struct norm_tensors {
  const void *x = nullptr, *gamma = nullptr, *beta = nullptr, *dy = nullptr; ///< `type`
  double *y = nullptr, *mean = nullptr, *rstd = nullptr;
  double *dx = nullptr, *dgamma = nullptr, *dbeta = nullptr;
};
/// LayerNorm (beta and mean non-null) or RMSNorm in float64, the host reference's formulas.
/// `scratch` holds 2 * ceil(rows / 512) * cols doubles when backward.
void launch_norm_reference(dtype type, std::int64_t rows, std::int64_t cols, double eps,
                           bool layernorm, bool backward, const norm_tensors &t, double *scratch,
                           cudaStream_t stream);
/// Doubles launch_norm_reference needs as scratch.
[[nodiscard]] std::size_t norm_scratch_doubles(std::int64_t rows, std::int64_t cols);

/// Softmax over each row in float64; with dy and dx, its backward too.
void launch_softmax_reference(dtype type, std::int64_t rows, std::int64_t cols, const void *x,
                              const void *dy, double *y, double *dx, cudaStream_t stream);

/// What one comparison's kernels found (device memory; reset with compare_state_init).
struct compare_state {
  unsigned long long scale_bits;     ///< max |ref| over finite ref (bits of a double >= 0)
  unsigned long long lo_key, hi_key; ///< ordered keys of min(ref), max(ref)
  unsigned long long max_abs_bits;   ///< max |out - ref| (bits of a double >= 0)
  unsigned long long max_rel_bits;   ///< max |out - ref| / max(|ref|, tiny)
  unsigned long long first_bad;      ///< smallest failing index (ULLONG_MAX: none)
  unsigned long long first_diff;     ///< smallest index with out != ref (ULLONG_MAX: none)
  unsigned long long poison_count;   ///< elements that hold a poison
  unsigned int ref_nonzero, not_same, out_nonzero, pad;
};
/// The state before a comparison.
[[nodiscard]] compare_state compare_state_init();
/// Double of an ordered key (lo_key, hi_key).
[[nodiscard]] double key_to_double(unsigned long long key);

/// Compares n elements of `type` at `out` with float64 `ref` (reference::compare's rule),
/// accumulating into `state` (device memory, initialised). An fp8, integer or bool element
/// holding `poison` (reference::poison_bits) counts as unwritten and fails, as a NaN poison does.
void launch_compare(const void *out, dtype type, const double *ref, std::size_t n, double rtol,
                    double atol, unsigned long long poison, compare_state *state,
                    cudaStream_t stream);

/// The smallest index where n elements of `width` bytes at a and b differ, into *result
/// (device memory, set to ULLONG_MAX first by the caller).
void launch_first_difference(const void *a, const void *b, std::size_t n, std::size_t width,
                             unsigned long long *result, cudaStream_t stream);

} // namespace prereg::cuda
