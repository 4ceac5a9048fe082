// Device code shared by the CUDA arms: dtype conversion, 16-byte vector access, row-group sums,
// the compile-time cols dispatch, persistent-grid sizing and the [P, N] partial reduction.
#pragma once

#include "cuda/cuda_call.hpp"
#include "prereg/arm.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <utility>

namespace prereg::cuda {

/// Threads per block of every row kernel.
inline constexpr int block_threads = 256;
/// Largest number of elements one thread keeps of a row (the row lives in registers).
inline constexpr int max_elems_per_thread = 32;

// --- element conversion --------------------------------------------------------------------

template <class T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <class T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/// Rows each row slot of a persistent backward loads before using the first: 2 for 16-bit
/// types (their rows are half the bytes, so one row in flight per slot leaves HBM idle).
template <class T> inline constexpr int rows_in_flight = sizeof(T) == 4 ? 1 : 2;

/// Elements in one 16-byte vector.
template <class T> inline constexpr int vec_elems = 16 / static_cast<int>(sizeof(T));

template <class T> __device__ __forceinline__ float bits_to_float(unsigned short b);
template <> __device__ __forceinline__ float bits_to_float<__half>(unsigned short b) {
  return __half2float(__ushort_as_half(b));
}
template <> __device__ __forceinline__ float bits_to_float<__nv_bfloat16>(unsigned short b) {
  return __bfloat162float(__ushort_as_bfloat16(b));
}
template <class T> __device__ __forceinline__ unsigned short float_to_bits(float v);
template <> __device__ __forceinline__ unsigned short float_to_bits<__half>(float v) {
  return __half_as_ushort(__float2half_rn(v));
}
template <> __device__ __forceinline__ unsigned short float_to_bits<__nv_bfloat16>(float v) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

__device__ __forceinline__ void unpack_vec(float4 raw, float *out) {
  out[0] = raw.x;
  out[1] = raw.y;
  out[2] = raw.z;
  out[3] = raw.w;
}

/// Converts one 16-byte vector of T (as loaded bits) into vec_elems<T> floats.
template <class T> __device__ __forceinline__ void unpack_raw(uint4 raw, float *out) {
  if constexpr (sizeof(T) == 4) {
    out[0] = __uint_as_float(raw.x);
    out[1] = __uint_as_float(raw.y);
    out[2] = __uint_as_float(raw.z);
    out[3] = __uint_as_float(raw.w);
  } else {
    const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      out[2 * k] = bits_to_float<T>(static_cast<unsigned short>(w[k] & 0xffffu));
      out[2 * k + 1] = bits_to_float<T>(static_cast<unsigned short>(w[k] >> 16));
    }
  }
}

/// Loads one 16-byte vector at `p` with the streaming hint, kept as bits (2 elements per
/// register for fp16/bf16, so more rows fit in flight); convert with unpack_raw.
template <class T> __device__ __forceinline__ uint4 load_raw_stream(const T *p) {
  return __ldcs(reinterpret_cast<const uint4 *>(p));
}

/// Loads one 16-byte vector at `p` (16-byte aligned) into vec_elems<T> floats.
template <class T> __device__ __forceinline__ void load_vec(const T *p, float *out) {
  if constexpr (sizeof(T) == 4) {
    unpack_vec(*reinterpret_cast<const float4 *>(p), out);
  } else {
    const uint4 raw = *reinterpret_cast<const uint4 *>(p);
    const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      out[2 * k] = bits_to_float<T>(static_cast<unsigned short>(w[k] & 0xffffu));
      out[2 * k + 1] = bits_to_float<T>(static_cast<unsigned short>(w[k] >> 16));
    }
  }
}

/// Loads like load_vec but with the streaming (evict-first) hint: for data read exactly once.
template <class T> __device__ __forceinline__ void load_vec_stream(const T *p, float *out) {
  if constexpr (sizeof(T) == 4) {
    unpack_vec(__ldcs(reinterpret_cast<const float4 *>(p)), out);
  } else {
    const uint4 raw = __ldcs(reinterpret_cast<const uint4 *>(p));
    const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      out[2 * k] = bits_to_float<T>(static_cast<unsigned short>(w[k] & 0xffffu));
      out[2 * k + 1] = bits_to_float<T>(static_cast<unsigned short>(w[k] >> 16));
    }
  }
}

/// Loads a 16-byte vector bypassing L1 (ld.global.cg): for data other blocks write concurrently.
__device__ __forceinline__ void load_f32x4_l2(const float *p, float *out) {
  unpack_vec(__ldcg(reinterpret_cast<const float4 *>(p)), out);
}

/// Converts vec_elems<T> floats to T and stores them as one 16-byte vector at `p`.
template <class T> __device__ __forceinline__ void store_vec(T *p, const float *in) {
  if constexpr (sizeof(T) == 4) {
    *reinterpret_cast<float4 *>(p) = make_float4(in[0], in[1], in[2], in[3]);
  } else {
    uint4 raw;
    unsigned w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      w[k] = static_cast<unsigned>(float_to_bits<T>(in[2 * k])) |
             (static_cast<unsigned>(float_to_bits<T>(in[2 * k + 1])) << 16);
    raw.x = w[0];
    raw.y = w[1];
    raw.z = w[2];
    raw.w = w[3];
    *reinterpret_cast<uint4 *>(p) = raw;
  }
}

/// Stores like store_vec with the streaming hint (st.global.cs): output written exactly once.
template <class T> __device__ __forceinline__ void store_vec_stream(T *p, const float *in) {
  if constexpr (sizeof(T) == 4) {
    __stcs(reinterpret_cast<float4 *>(p), make_float4(in[0], in[1], in[2], in[3]));
  } else {
    uint4 raw;
    unsigned w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      w[k] = static_cast<unsigned>(float_to_bits<T>(in[2 * k])) |
             (static_cast<unsigned>(float_to_bits<T>(in[2 * k + 1])) << 16);
    raw.x = w[0];
    raw.y = w[1];
    raw.z = w[2];
    raw.w = w[3];
    __stcs(reinterpret_cast<uint4 *>(p), raw);
  }
}

/// Stores four floats as one 16-byte vector.
__device__ __forceinline__ void store_f32x4(float *p, const float *in) {
  *reinterpret_cast<float4 *>(p) = make_float4(in[0], in[1], in[2], in[3]);
}

// --- sums over a row group ---------------------------------------------------------------

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Sums N values over each group of TPR consecutive threads (TPR a multiple of 32) and gives
/// every thread its group's sums. `smem` holds N * blockDim.x / 32 floats. Every thread of
/// the block must call it (it may hold a __syncthreads). Deterministic order.
template <int TPR, int N> __device__ __forceinline__ void group_sum(float (&v)[N], float *smem) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    v[i] = warp_sum(v[i]);
  if constexpr (TPR > 32) {
    constexpr int wpr = TPR / 32;
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int warps = static_cast<int>(blockDim.x) / 32;
    if (threadIdx.x % 32 == 0) {
#pragma unroll
      for (int i = 0; i < N; ++i)
        smem[i * warps + warp] = v[i];
    }
    __syncthreads();
    const int first = (warp / wpr) * wpr;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      float s = 0.f;
#pragma unroll
      for (int k = 0; k < wpr; ++k)
        s += smem[i * warps + first + k];
      v[i] = s;
    }
    __syncthreads();
  }
}

/// Sums one value over the whole block (any blockDim multiple of 32, <= 1024); every thread
/// gets the result. `smem` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float *smem) {
  v = warp_sum(v);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
  if (threadIdx.x % 32 == 0)
    smem[warp] = v;
  __syncthreads();
  float s = 0.f;
  for (int k = 0; k < warps; ++k)
    s += smem[k];
  __syncthreads();
  return s;
}

// --- compile-time row shapes -----------------------------------------------------------------

/// How a row is spread over threads: TPR threads, each holding VPT 16-byte vectors of T;
/// thread t of the group holds vectors t, t + TPR, ... (coalesced per warp).
template <class T, int TPR_, int VPT_> struct row_shape {
  static constexpr int TPR = TPR_;
  static constexpr int VPT = VPT_;
  static constexpr int V = vec_elems<T>;
  static constexpr int E = VPT * V;   ///< elements per thread
  static constexpr int CAP = TPR * E; ///< largest row it holds
};

namespace detail {
template <class T, int TPR, int VPT, class F> void dispatch_vpt(int vpt, F &f) {
  constexpr int max_vpt = max_elems_per_thread / vec_elems<T>;
  if constexpr (VPT > max_vpt) {
    throw std::logic_error("row dispatch: no vector count fits");
  } else {
    if (vpt == VPT) {
      f.template operator()<row_shape<T, TPR, VPT>>();
      return;
    }
    dispatch_vpt<T, TPR, VPT + 1>(vpt, f);
  }
}
} // namespace detail

/// The threads per row a row of `cols` takes: the fewest of 32, 64, 128, 256 whose threads
/// hold it with at most max_elems_per_thread elements each.
template <class T> [[nodiscard]] inline int threads_per_row(std::int64_t cols) {
  int tpr = 32;
  while (static_cast<std::int64_t>(tpr) * max_elems_per_thread < cols && tpr < 256)
    tpr *= 2;
  return tpr;
}

/// Calls `f.template operator()<row_shape<T, TPR, VPT>>()` with the shape for `cols`
/// (cols <= 8192, cols % vec_elems<T> == 0): the smallest TPR (a warp for short rows, up to
/// 8 warps for 8192) and the fewest vectors per thread that hold the row.
template <class T, class F> void dispatch_row(std::int64_t cols, F &&f) {
  constexpr int V = vec_elems<T>;
  if (cols < 1 || cols > 256 * max_elems_per_thread || cols % V != 0)
    throw std::invalid_argument("row dispatch: cols out of range");
  const int tpr = threads_per_row<T>(cols);
  const int vpt = static_cast<int>((cols + static_cast<std::int64_t>(tpr) * V - 1) /
                                   (static_cast<std::int64_t>(tpr) * V));
  // A row wider than one warp holds needs more than half of max_vpt vectors per thread.
  constexpr int wide = max_elems_per_thread / V / 2 + 1;
  switch (tpr) {
  case 32:
    detail::dispatch_vpt<T, 32, 1>(vpt, f);
    break;
  case 64:
    detail::dispatch_vpt<T, 64, wide>(vpt, f);
    break;
  case 128:
    detail::dispatch_vpt<T, 128, wide>(vpt, f);
    break;
  default:
    detail::dispatch_vpt<T, 256, wide>(vpt, f);
    break;
  }
}

/// Calls `f.template operator()<T>()` with the CUDA element type of `type`.
template <class F> void dispatch_dtype(dtype type, F &&f) {
  switch (type) {
  case dtype::fp32:
    f.template operator()<float>();
    break;
  case dtype::fp16:
    f.template operator()<__half>();
    break;
  case dtype::bf16:
    f.template operator()<__nv_bfloat16>();
    break;
  }
}

/// The stream of an arm call.
[[nodiscard]] inline cudaStream_t as_stream(void *s) { return static_cast<cudaStream_t>(s); }

/// Multiprocessors of the current device (queried once per process).
[[nodiscard]] inline int sm_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    PREREG_CUDA_CALL(cudaGetDevice(&dev));
    PREREG_CUDA_CALL(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev));
    return v;
  }();
  return n;
}

/// Blocks of `kernel` (block_threads threads) resident at once on the whole device: the size
/// of a persistent grid. Queried once per kernel (outside any graph capture: the first call
/// of every arm happens in the correctness check).
template <auto Kernel> [[nodiscard]] int resident_blocks() {
  static const int n = [] {
    int per_sm = 0;
    PREREG_CUDA_CALL(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, block_threads, 0));
    return (per_sm < 1 ? 1 : per_sm) * sm_count();
  }();
  return n;
}

// --- [P, N] partials -> [N] ----------------------------------------------------------------

/// Sums `parts` rows of fp32 partials ([parts, cols], row-major) per column in a fixed order
/// and writes the sums as T. Two arrays at once (dgamma, dbeta); `b`/`out_b` may be null.
/// Block (32, 8): 32 columns, 8 row slices; grid ceil(cols / 32).
template <class T>
__global__ void __launch_bounds__(256)
    reduce_partials_kernel(const float *__restrict__ a, const float *__restrict__ b, int parts,
                           int cols, T *__restrict__ out_a, T *__restrict__ out_b) {
  __shared__ float tile[2][8][33];
  const int c = static_cast<int>(blockIdx.x) * 32 + static_cast<int>(threadIdx.x);
  float sa = 0.f, sb = 0.f;
  if (c < cols) {
    for (int p = static_cast<int>(threadIdx.y); p < parts; p += 8) {
      sa += a[static_cast<std::int64_t>(p) * cols + c];
      if (b != nullptr)
        sb += b[static_cast<std::int64_t>(p) * cols + c];
    }
  }
  tile[0][threadIdx.y][threadIdx.x] = sa;
  tile[1][threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float ta = 0.f, tb = 0.f;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      ta += tile[0][k][threadIdx.x];
      tb += tile[1][k][threadIdx.x];
    }
    out_a[c] = from_float<T>(ta);
    if (out_b != nullptr)
      out_b[c] = from_float<T>(tb);
  }
}

/// Launches reduce_partials_kernel.
template <class T>
void reduce_partials(const float *a, const float *b, int parts, int cols, T *out_a, T *out_b,
                     cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid(static_cast<unsigned>((cols + 31) / 32));
  PREREG_CUDA_LAUNCH(reduce_partials_kernel<T>
                     <<<grid, block, 0, stream>>>(a, b, parts, cols, out_a, out_b));
}

/// Column sums of a [rows, cols] tensor of T in fp32, per chunk of rows: block b of the grid
/// writes partial[b][c] = sum of rows [b*chunk, (b+1)*chunk) of column c. One thread per
/// 16-byte column vector; grid (chunks, ceil(cols / (256 * V))).
template <class T>
__global__ void __launch_bounds__(256)
    column_partials_kernel(const T *__restrict__ in, std::int64_t rows, int cols, int chunk,
                           float *__restrict__ partial) {
  constexpr int V = vec_elems<T>;
  const int c = (static_cast<int>(blockIdx.y) * 256 + static_cast<int>(threadIdx.x)) * V;
  if (c >= cols)
    return;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * chunk;
  const std::int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
  float acc[V] = {};
  for (std::int64_t r = r0; r < r1; ++r) {
    float v[V];
    load_vec(in + r * cols + c, v);
#pragma unroll
    for (int k = 0; k < V; ++k)
      acc[k] += v[k];
  }
  float *out = partial + static_cast<std::int64_t>(blockIdx.x) * cols + c;
#pragma unroll
  for (int k = 0; k < V; k += 4)
    store_f32x4(out + k, acc + k);
}

/// Rows per chunk for column reductions over `rows` rows: about two chunks per SM.
[[nodiscard]] inline int column_chunk(std::int64_t rows) {
  const std::int64_t target = 2LL * sm_count();
  std::int64_t chunk = (rows + target - 1) / target;
  if (chunk < 16)
    chunk = 16;
  return static_cast<int>(chunk);
}

/// Blocks needed for `items` work items at `per_block` items a block.
[[nodiscard]] inline unsigned grid_for(std::int64_t items, int per_block) {
  return static_cast<unsigned>((items + per_block - 1) / per_block);
}

} // namespace prereg::cuda
