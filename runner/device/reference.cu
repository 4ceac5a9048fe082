// The float64 references of the built-in operations, the checked inputs' fill, the output
// comparison and the input-mutation check on a CUDA device (reference_kernels.hpp). The
// formulas are the host reference's (spec/reference.cpp, spec/operations.cpp) in float64; only
// the order of the sums differs.
#include "cuda/common.cuh"
#include "device/elements.cuh"
#include "device/reference_kernels.hpp"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cstring>
#include <type_traits>

namespace prereg::cuda {
namespace {

constexpr unsigned full_mask = 0xffffffffu;
constexpr int threads = 256;
constexpr std::int64_t column_chunk_rows = 512; ///< rows one column-sum partial covers

// --- element access ---------------------------------------------------------------------------

template <class T> __device__ __forceinline__ double value_at(const T *p, std::size_t i) {
  return static_cast<double>(to_float<T>(p[i]));
}

/// The float bits of element i as the host's unpack widens it (NaN payloads kept).
template <class T> __device__ __forceinline__ unsigned widened_bits(const T *p, std::size_t i) {
  if constexpr (sizeof(T) == 4) {
    return __float_as_uint(p[i]);
  } else {
    const unsigned short h = reinterpret_cast<const unsigned short *>(p)[i];
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      return static_cast<unsigned>(h) << 16;
    } else {
      const unsigned sign = static_cast<unsigned>(h & 0x8000u) << 16;
      if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0)
        return sign | 0x7f800000u | (static_cast<unsigned>(h & 0x3ffu) << 13);
      return __float_as_uint(__half2float(__ushort_as_half(h)));
    }
  }
}

/// The poisons of spec/reference.cpp as widened float bits (fp32, bf16, fp16).
__device__ __forceinline__ bool is_poison_bits(unsigned b) {
  return b == 0x7fe5a5a5u || b == 0x7fe50000u || b == 0x7fcb4000u;
}

/// How the comparison reads an output: fp32, fp16 and bf16 as their floats (a poison by its
/// widened bits); an fp8, integer or bool type through elements.cuh (a poison by its bytes).
template <class T> struct classic_reader {
  const T *p;
  __device__ __forceinline__ double value(std::size_t i) const { return value_at(p, i); }
  __device__ __forceinline__ bool poison(std::size_t i) const {
    return is_poison_bits(widened_bits(p, i));
  }
};
template <dtype D> struct typed_reader {
  const void *p;
  unsigned long long poison_bits;
  __device__ __forceinline__ double value(std::size_t i) const {
    return element_is_poison<D>(p, i, poison_bits) ? nan("") : element_value<D>(p, i);
  }
  __device__ __forceinline__ bool poison(std::size_t i) const {
    return element_is_poison<D>(p, i, poison_bits);
  }
};

template <class T> __device__ __forceinline__ T round_from_double(double v);
template <> __device__ __forceinline__ float round_from_double<float>(double v) {
  return __double2float_rn(v);
}
template <> __device__ __forceinline__ __half round_from_double<__half>(double v) {
  return __double2half(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 round_from_double<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}

__host__ __device__ __forceinline__ std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1) with 53 bits from (seed, k).
__device__ __forceinline__ double unit(std::uint64_t seed, std::uint64_t k) {
  return static_cast<double>(mix(seed + (k + 1) * 0x9e3779b97f4a7c15ULL) >> 11) * 0x1.0p-53;
}

// --- reductions -------------------------------------------------------------------------------

__device__ __forceinline__ double block_sum(double v, double *sh) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(full_mask, v, o);
  __syncthreads(); // the previous reduction's readers are done with sh
  if (threadIdx.x % 32 == 0)
    sh[threadIdx.x / 32] = v;
  __syncthreads();
  double t = 0;
  for (int k = 0; k < static_cast<int>(blockDim.x / 32); ++k)
    t += sh[k];
  return t;
}

__device__ __forceinline__ double block_max(double v, double *sh) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmax(v, __shfl_xor_sync(full_mask, v, o));
  __syncthreads();
  if (threadIdx.x % 32 == 0)
    sh[threadIdx.x / 32] = v;
  __syncthreads();
  double t = sh[0];
  for (int k = 1; k < static_cast<int>(blockDim.x / 32); ++k)
    t = fmax(t, sh[k]);
  return t;
}

template <class F>
__device__ __forceinline__ unsigned long long warp_fold(unsigned long long v, F f) {
  for (int o = 16; o > 0; o >>= 1)
    v = f(v, __shfl_xor_sync(full_mask, v, o));
  return v;
}

__device__ __forceinline__ unsigned long long umax(unsigned long long a, unsigned long long b) {
  return a > b ? a : b;
}
__device__ __forceinline__ unsigned long long umin(unsigned long long a, unsigned long long b) {
  return a < b ? a : b;
}

/// An order-preserving key of a double (not NaN) as an unsigned integer.
__host__ __device__ __forceinline__ unsigned long long key_of_bits(unsigned long long b) {
  return (b >> 63) != 0 ? ~b : b ^ 0x8000000000000000ULL;
}

unsigned grid_for(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + threads - 1) / threads, 4096));
}

// --- the checked fill -------------------------------------------------------------------------

template <class T>
__global__ void checked_fill_kernel(T *p, std::size_t n, double lo, double hi, double row_offset,
                                    std::int64_t row_len, std::uint64_t seed) {
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    double offset = 0;
    if (row_len > 0)
      offset = -row_offset +
               2 * row_offset *
                   unit(seed ^ 0x6a09e667f3bcc909ULL, i / static_cast<std::size_t>(row_len));
    T v = round_from_double<T>(hi != 0 ? hi : lo); // after 64 zeros (never seen): a bound
    for (std::uint64_t attempt = 0; attempt < 64; ++attempt) {
      const T w = round_from_double<T>(offset + lo +
                                       (hi - lo) * unit(seed + attempt * 0x632be59bd9b4e019ULL, i));
      if (to_float<T>(w) != 0.f) {
        v = w;
        break;
      }
    }
    p[i] = v;
  }
}

/// An fp8, integer or bool tensor's fill (docs/engine.md): integers lo + floor(u span) (u of
/// attempt 0), fp8 U(lo, hi) kept inside [lo, hi] by fp8_inside, drawn again while zero
/// (attempts 0 to 63), then `fallback`.
template <dtype D>
__global__ void typed_fill_kernel(void *p, std::size_t n, double lo, double hi, double fallback,
                                  std::uint64_t seed) {
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    double v;
    if constexpr (D == dtype::fp8_e4m3 || D == dtype::fp8_e5m2) {
      v = fallback;
      for (std::uint64_t attempt = 0; attempt < 64; ++attempt) {
        const double w = fp8_inside(
            lo + (hi - lo) * unit(seed + attempt * 0x632be59bd9b4e019ULL, i), lo, hi, fp8_of<D>());
        if (w != 0.0) {
          v = w;
          break;
        }
      }
    } else {
      v = fmin(lo + floor(unit(seed, i) * (hi - lo)), hi - 1);
    }
    store_element<D>(p, i, v);
  }
}

// --- normalisations ---------------------------------------------------------------------------

template <class T>
__global__ void __launch_bounds__(threads)
    norm_rows_kernel(std::int64_t rows, std::int64_t cols, double eps, bool layernorm,
                     bool backward, const T *x, const T *gamma, const T *beta, const T *dy,
                     double *y, double *mean, double *rstd, double *dx) {
  __shared__ double sh[32];
  const double n = static_cast<double>(cols);
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * cols;
    double mu = 0;
    if (layernorm) {
      double s = 0;
      for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        s += value_at(xr, c);
      mu = block_sum(s, sh) / n;
    }
    double s2 = 0;
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double d = value_at(xr, c) - mu;
      s2 += d * d;
    }
    const double rs = 1.0 / sqrt(block_sum(s2, sh) / n + eps);
    if (threadIdx.x == 0) {
      rstd[r] = rs;
      if (mean != nullptr)
        mean[r] = mu;
    }
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double xv = value_at(xr, c), g = value_at(gamma, c);
      y[r * cols + c] = layernorm ? (xv - mu) * rs * g + value_at(beta, c) : xv * rs * g;
    }
    if (!backward)
      continue;
    const T *dyr = dy + r * cols;
    double m1 = 0, m2 = 0;
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double xv = value_at(xr, c), g = value_at(gamma, c), d = value_at(dyr, c);
      m1 += d * g;
      m2 += layernorm ? d * g * ((xv - mu) * rs) : d * g * xv;
    }
    m1 = block_sum(m1, sh) / n;
    m2 = block_sum(m2, sh) / n;
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double xv = value_at(xr, c), g = value_at(gamma, c), d = value_at(dyr, c);
      dx[r * cols + c] =
          layernorm ? rs * (d * g - m1 - (xv - mu) * rs * m2) : rs * (d * g - xv * rs * rs * m2);
    }
  }
}

/// Column sums of one chunk of rows: partial[chunk][c] of dgamma's and dbeta's terms.
template <class T>
__global__ void norm_columns_kernel(std::int64_t rows, std::int64_t cols, bool layernorm,
                                    const T *x, const T *dy, const double *mean, const double *rstd,
                                    double *partial) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols)
    return;
  const std::int64_t chunk = blockIdx.y;
  const std::int64_t r0 = chunk * column_chunk_rows;
  const std::int64_t r1 = min(rows, r0 + column_chunk_rows);
  double g = 0, b = 0;
  for (std::int64_t r = r0; r < r1; ++r) {
    const double xv = value_at(x, r * cols + c), d = value_at(dy, r * cols + c);
    g += layernorm ? d * ((xv - mean[r]) * rstd[r]) : d * xv * rstd[r];
    b += d;
  }
  const std::int64_t chunks = gridDim.y;
  partial[chunk * cols + c] = g;
  partial[(chunks + chunk) * cols + c] = b;
}

__global__ void column_total_kernel(std::int64_t cols, std::int64_t chunks, const double *partial,
                                    double *dgamma, double *dbeta) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols)
    return;
  double g = 0, b = 0;
  for (std::int64_t k = 0; k < chunks; ++k) {
    g += partial[k * cols + c];
    b += partial[(chunks + k) * cols + c];
  }
  dgamma[c] = g;
  if (dbeta != nullptr)
    dbeta[c] = b;
}

// --- softmax ----------------------------------------------------------------------------------

template <class T>
__global__ void __launch_bounds__(threads)
    softmax_rows_kernel(std::int64_t rows, std::int64_t cols, const T *x, const T *dy, double *y,
                        double *dx) {
  __shared__ double sh[32];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * cols;
    double *yr = y + r * cols;
    double m = -INFINITY;
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      m = fmax(m, value_at(xr, c));
    m = block_max(m, sh);
    double s = 0;
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double e = exp(value_at(xr, c) - m);
      yr[c] = e;
      s += e;
    }
    s = block_sum(s, sh);
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      yr[c] /= s;
    if (dy == nullptr)
      continue;
    __syncthreads(); // every yr[c] is final (each thread reads only its own columns anyway)
    const T *dyr = dy + r * cols;
    double dot = 0;
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      dot += value_at(dyr, c) * yr[c];
    dot = block_sum(dot, sh);
    for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      dx[r * cols + c] = yr[c] * (value_at(dyr, c) - dot);
  }
}

// --- comparison -------------------------------------------------------------------------------

__global__ void ref_stats_kernel(const double *ref, std::size_t n, compare_state *s) {
  unsigned long long scale = 0, lo = ULLONG_MAX, hi = 0;
  unsigned nonzero = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const double r = ref[i];
    if (isfinite(r))
      scale = umax(scale, static_cast<unsigned long long>(__double_as_longlong(fabs(r))));
    if (!isnan(r)) {
      const auto k = key_of_bits(static_cast<unsigned long long>(__double_as_longlong(r)));
      lo = umin(lo, k);
      hi = umax(hi, k);
    }
    if (r != 0.0)
      nonzero = 1;
  }
  scale = warp_fold(scale, umax);
  lo = warp_fold(lo, umin);
  hi = warp_fold(hi, umax);
  nonzero = __any_sync(full_mask, nonzero) ? 1u : 0u;
  if (threadIdx.x % 32 == 0) {
    atomicMax(&s->scale_bits, scale);
    atomicMin(&s->lo_key, lo);
    atomicMax(&s->hi_key, hi);
    if (nonzero)
      atomicOr(&s->ref_nonzero, 1u);
  }
}

template <class R>
__global__ void compare_kernel(R out, const double *ref, std::size_t n, double rtol, double atol,
                               compare_state *s) {
  const double tolerance =
      atol + rtol * __longlong_as_double(static_cast<long long>(s->scale_bits));
  const double first = out.value(0);
  unsigned long long max_abs = 0, max_rel = 0, first_bad = ULLONG_MAX, first_diff = ULLONG_MAX,
                     poison = 0;
  unsigned not_same = 0, nonzero = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const double o = out.value(i), r = ref[i];
    bool ok = false;
    if (isnan(o) || isnan(r)) {
      if (out.poison(i))
        ++poison;
    } else {
      const double err = fabs(o - r);
      const double rel = err / fmax(fabs(r), DBL_MIN);
      if (!isnan(err))
        max_abs = umax(max_abs, static_cast<unsigned long long>(__double_as_longlong(err)));
      if (!isnan(rel))
        max_rel = umax(max_rel, static_cast<unsigned long long>(__double_as_longlong(rel)));
      ok = err <= tolerance;
    }
    if (!ok)
      first_bad = umin(first_bad, i);
    if (!(o == first))
      not_same = 1;
    if (o != 0.0)
      nonzero = 1;
    if (r != o)
      first_diff = umin(first_diff, i);
  }
  max_abs = warp_fold(max_abs, umax);
  max_rel = warp_fold(max_rel, umax);
  first_bad = warp_fold(first_bad, umin);
  first_diff = warp_fold(first_diff, umin);
  poison = warp_fold(poison, [](unsigned long long a, unsigned long long b) { return a + b; });
  not_same = __any_sync(full_mask, not_same) ? 1u : 0u;
  nonzero = __any_sync(full_mask, nonzero) ? 1u : 0u;
  if (threadIdx.x % 32 == 0) {
    atomicMax(&s->max_abs_bits, max_abs);
    atomicMax(&s->max_rel_bits, max_rel);
    atomicMin(&s->first_bad, first_bad);
    atomicMin(&s->first_diff, first_diff);
    if (poison != 0)
      atomicAdd(&s->poison_count, poison);
    if (not_same)
      atomicOr(&s->not_same, 1u);
    if (nonzero)
      atomicOr(&s->out_nonzero, 1u);
  }
}

template <class W>
__global__ void first_difference_kernel(const W *a, const W *b, std::size_t n,
                                        unsigned long long *result) {
  unsigned long long first = ULLONG_MAX;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (a[i] != b[i]) {
      first = i;
      break; // later i of this thread are larger
    }
  first = warp_fold(first, umin);
  if (threadIdx.x % 32 == 0 && first != ULLONG_MAX)
    atomicMin(result, first);
}

} // namespace

void launch_typed_fill(void *p, std::size_t n, dtype type, double lo, double hi, double fallback,
                       std::uint64_t seed, cudaStream_t stream) {
  if (n == 0)
    return;
  (void)dispatch_typed(type, [&]<dtype D>() {
    PREREG_CUDA_LAUNCH(typed_fill_kernel<D>
                       <<<grid_for(n), threads, 0, stream>>>(p, n, lo, hi, fallback, seed));
  });
}

void launch_checked_fill(void *p, std::size_t n, dtype type, double lo, double hi,
                         double row_offset, std::int64_t row_len, std::uint64_t seed,
                         cudaStream_t stream) {
  if (n == 0)
    return;
  dispatch_dtype(type, [&]<class T>() {
    PREREG_CUDA_LAUNCH(checked_fill_kernel<T><<<grid_for(n), threads, 0, stream>>>(
        static_cast<T *>(p), n, lo, hi, row_offset, row_len, seed));
  });
}

std::size_t norm_scratch_doubles(std::int64_t rows, std::int64_t cols) {
  const std::int64_t chunks = (rows + column_chunk_rows - 1) / column_chunk_rows;
  return static_cast<std::size_t>(2 * chunks * cols);
}

void launch_norm_reference(dtype type, std::int64_t rows, std::int64_t cols, double eps,
                           bool layernorm, bool backward, const norm_tensors &t, double *scratch,
                           cudaStream_t stream) {
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>(rows, 1 << 16));
  dispatch_dtype(type, [&]<class T>() {
    PREREG_CUDA_LAUNCH(norm_rows_kernel<T><<<grid, threads, 0, stream>>>(
        rows, cols, eps, layernorm, backward, static_cast<const T *>(t.x),
        static_cast<const T *>(t.gamma), static_cast<const T *>(t.beta),
        static_cast<const T *>(t.dy), t.y, t.mean, t.rstd, t.dx));
    if (!backward)
      return;
    const std::int64_t chunks = (rows + column_chunk_rows - 1) / column_chunk_rows;
    const dim3 cgrid(static_cast<unsigned>((cols + threads - 1) / threads),
                     static_cast<unsigned>(chunks));
    PREREG_CUDA_LAUNCH(norm_columns_kernel<T><<<cgrid, threads, 0, stream>>>(
        rows, cols, layernorm, static_cast<const T *>(t.x), static_cast<const T *>(t.dy), t.mean,
        t.rstd, scratch));
  });
  if (backward) {
    const std::int64_t chunks = (rows + column_chunk_rows - 1) / column_chunk_rows;
    PREREG_CUDA_LAUNCH(
        column_total_kernel<<<static_cast<unsigned>((cols + threads - 1) / threads), threads, 0,
                              stream>>>(cols, chunks, scratch, t.dgamma, t.dbeta));
  }
}

void launch_softmax_reference(dtype type, std::int64_t rows, std::int64_t cols, const void *x,
                              const void *dy, double *y, double *dx, cudaStream_t stream) {
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>(rows, 1 << 16));
  dispatch_dtype(type, [&]<class T>() {
    PREREG_CUDA_LAUNCH(softmax_rows_kernel<T><<<grid, threads, 0, stream>>>(
        rows, cols, static_cast<const T *>(x), static_cast<const T *>(dy), y, dx));
  });
}

compare_state compare_state_init() {
  compare_state s{};
  s.lo_key = ULLONG_MAX;
  s.first_bad = ULLONG_MAX;
  s.first_diff = ULLONG_MAX;
  return s;
}

double key_to_double(unsigned long long key) {
  const unsigned long long b = (key >> 63) != 0 ? key ^ 0x8000000000000000ULL : ~key;
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}

void launch_compare(const void *out, dtype type, const double *ref, std::size_t n, double rtol,
                    double atol, unsigned long long poison, compare_state *state,
                    cudaStream_t stream) {
  if (n == 0)
    return;
  PREREG_CUDA_LAUNCH(ref_stats_kernel<<<grid_for(n), threads, 0, stream>>>(ref, n, state));
  if (dispatch_typed(type, [&]<dtype D>() {
        PREREG_CUDA_LAUNCH(compare_kernel<typed_reader<D>><<<grid_for(n), threads, 0, stream>>>(
            typed_reader<D>{out, poison}, ref, n, rtol, atol, state));
      }))
    return;
  dispatch_dtype(type, [&]<class T>() {
    PREREG_CUDA_LAUNCH(compare_kernel<classic_reader<T>><<<grid_for(n), threads, 0, stream>>>(
        classic_reader<T>{static_cast<const T *>(out)}, ref, n, rtol, atol, state));
  });
}

void launch_first_difference(const void *a, const void *b, std::size_t n, std::size_t width,
                             unsigned long long *result, cudaStream_t stream) {
  if (n == 0)
    return;
  switch (width) {
  case 1:
    PREREG_CUDA_LAUNCH(first_difference_kernel<unsigned char><<<grid_for(n), threads, 0, stream>>>(
        static_cast<const unsigned char *>(a), static_cast<const unsigned char *>(b), n, result));
    break;
  case 2:
    PREREG_CUDA_LAUNCH(first_difference_kernel<unsigned short><<<grid_for(n), threads, 0, stream>>>(
        static_cast<const unsigned short *>(a), static_cast<const unsigned short *>(b), n, result));
    break;
  case 4:
    PREREG_CUDA_LAUNCH(first_difference_kernel<unsigned><<<grid_for(n), threads, 0, stream>>>(
        static_cast<const unsigned *>(a), static_cast<const unsigned *>(b), n, result));
    break;
  default:
    PREREG_CUDA_LAUNCH(first_difference_kernel<unsigned long long>
                       <<<grid_for(n), threads, 0, stream>>>(
                           static_cast<const unsigned long long *>(a),
                           static_cast<const unsigned long long *>(b), n, result));
  }
}

} // namespace prereg::cuda
