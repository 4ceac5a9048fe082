// softmax.fused: one kernel per pass, each row read once into registers (16-byte streaming
// vectors) by a group of 32..256 threads (a row slot). Forward: the row max and the sum of
// exp(x - max) are group reductions over the registers, then y = exp(x - max) / sum. Backward:
// y and dy in registers, one group sum of dy * y, then dx = y * (dy - sum). A slot loads
// rows_in_flight<T> rows (1 fp32, 2 fp16/bf16) before using the first. Option rows_per_block:
// the row slots of one block (0 = automatic: 256 threads), clamped to 512 threads.
#include "cuda/common.cuh"
#include "cuda/softmax_arms.hpp"

#include <cmath>
#include <limits>

namespace prereg::cuda {
namespace {

constexpr const char *arm_name = "softmax.fused";
/// Largest block: rows_per_block is clamped to max_block / threads-per-row.
constexpr int max_block = 512;
constexpr float log2e = 1.4426950408889634f;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// The max over each group of TPR consecutive threads (TPR a multiple of 32), given to every
/// thread of the group; `smem` holds blockDim.x / 32 floats. Every thread of the block calls it.
template <int TPR> __device__ __forceinline__ float group_max(float v, float *smem) {
  v = warp_max(v);
  if constexpr (TPR > 32) {
    constexpr int wpr = TPR / 32;
    const int warp = static_cast<int>(threadIdx.x) / 32;
    if (threadIdx.x % 32 == 0)
      smem[warp] = v;
    __syncthreads();
    const int first = (warp / wpr) * wpr;
    float m = smem[first];
#pragma unroll
    for (int k = 1; k < wpr; ++k)
      m = fmaxf(m, smem[first + k]);
    v = m;
    __syncthreads();
  }
  return v;
}

/// y = softmax(x). A block has blockDim.x / S::TPR row slots; slot k takes rows base + q * slots
/// + k for q < R (all R rows loaded as raw 16-byte vectors before the first is used, so 16-bit
/// rows keep as many bytes in flight as fp32 ones). Elements past cols become -inf (they add
/// exp(-inf) = 0); rows past `rows` load zeros and store nothing.
template <class T, class S, int R>
__global__ void __launch_bounds__(max_block)
    softmax_fused_fwd(const T *__restrict__ x, T *__restrict__ y, std::int64_t rows, int cols) {
  __shared__ float red[max_block / 32];
  const int slots = static_cast<int>(blockDim.x) / S::TPR;
  const int slot = static_cast<int>(threadIdx.x) / S::TPR;
  const int lane = static_cast<int>(threadIdx.x) % S::TPR;
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * slots * R + slot;

  uint4 raw[R][S::VPT];
#pragma unroll
  for (int q = 0; q < R; ++q) {
    const std::int64_t row = base + static_cast<std::int64_t>(q) * slots;
#pragma unroll
    for (int j = 0; j < S::VPT; ++j) {
      const int c = (j * S::TPR + lane) * S::V;
      raw[q][j] =
          row < rows && c < cols ? load_raw_stream(x + row * cols + c) : make_uint4(0u, 0u, 0u, 0u);
    }
  }
#pragma unroll
  for (int q = 0; q < R; ++q) {
    const std::int64_t row = base + static_cast<std::int64_t>(q) * slots;
    float v[S::E];
#pragma unroll
    for (int j = 0; j < S::VPT; ++j) {
      unpack_raw<T>(raw[q][j], v + j * S::V);
      if ((j * S::TPR + lane) * S::V >= cols) {
#pragma unroll
        for (int k = 0; k < S::V; ++k)
          v[j * S::V + k] = -INFINITY;
      }
    }
    float m = v[0];
#pragma unroll
    for (int i = 1; i < S::E; ++i)
      m = fmaxf(m, v[i]);
    m = group_max<S::TPR>(m, red);
    float s[1] = {0.f};
#pragma unroll
    for (int i = 0; i < S::E; ++i) {
      // x - max first (exact for nearby values), then the base change: exp(d) = 2^(d log2 e).
      v[i] = exp2f((v[i] - m) * log2e);
      s[0] += v[i];
    }
    group_sum<S::TPR>(s, red);
    if (row < rows) {
      const float inv = 1.f / s[0];
#pragma unroll
      for (int j = 0; j < S::VPT; ++j) {
        const int c = (j * S::TPR + lane) * S::V;
        if (c < cols) {
          float out[S::V];
#pragma unroll
          for (int k = 0; k < S::V; ++k)
            out[k] = v[j * S::V + k] * inv;
          store_vec_stream(y + row * cols + c, out);
        }
      }
    }
  }
}

/// dx = y * (dy - sum(dy * y)), rows laid out over slots as in softmax_fused_fwd; y and dy stay
/// as loaded bits (two 16-bit elements per register) until used. Past cols and past rows the
/// bits are zero (+0 in every dtype: adds nothing).
template <class T, class S, int R>
__global__ void __launch_bounds__(max_block)
    softmax_fused_bwd(const T *__restrict__ y, const T *__restrict__ dy, T *__restrict__ dx,
                      std::int64_t rows, int cols) {
  __shared__ float red[max_block / 32];
  const int slots = static_cast<int>(blockDim.x) / S::TPR;
  const int slot = static_cast<int>(threadIdx.x) / S::TPR;
  const int lane = static_cast<int>(threadIdx.x) % S::TPR;
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * slots * R + slot;

  uint4 ry[R][S::VPT], rd[R][S::VPT];
#pragma unroll
  for (int q = 0; q < R; ++q) {
    const std::int64_t row = base + static_cast<std::int64_t>(q) * slots;
#pragma unroll
    for (int j = 0; j < S::VPT; ++j) {
      const int c = (j * S::TPR + lane) * S::V;
      if (row < rows && c < cols) {
        ry[q][j] = load_raw_stream(y + row * cols + c);
        rd[q][j] = load_raw_stream(dy + row * cols + c);
      } else {
        ry[q][j] = rd[q][j] = make_uint4(0u, 0u, 0u, 0u);
      }
    }
  }
#pragma unroll
  for (int q = 0; q < R; ++q) {
    const std::int64_t row = base + static_cast<std::int64_t>(q) * slots;
    float s[1] = {0.f};
#pragma unroll
    for (int j = 0; j < S::VPT; ++j) {
      float yv[S::V], dv[S::V];
      unpack_raw<T>(ry[q][j], yv);
      unpack_raw<T>(rd[q][j], dv);
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        s[0] += dv[k] * yv[k];
    }
    group_sum<S::TPR>(s, red);
    if (row < rows) {
#pragma unroll
      for (int j = 0; j < S::VPT; ++j) {
        const int c = (j * S::TPR + lane) * S::V;
        if (c < cols) {
          float yv[S::V], dv[S::V], out[S::V];
          unpack_raw<T>(ry[q][j], yv);
          unpack_raw<T>(rd[q][j], dv);
#pragma unroll
          for (int k = 0; k < S::V; ++k)
            out[k] = yv[k] * (dv[k] - s[0]);
          store_vec_stream(dx + row * cols + c, out);
        }
      }
    }
  }
}

/// Row slots per block for slots of `tpr` threads: the option rows_per_block (0 = automatic:
/// block_threads / tpr, i.e. 256 threads), clamped to max_block / tpr.
int rows_per_block(const tensor_args &t, int tpr) {
  const double opt = t.option("rows_per_block", 0);
  if (!(opt >= 0 && opt <= 1024) || opt != std::floor(opt))
    throw invalid_input(std::string(arm_name) +
                        ": option rows_per_block must be an integer in [0, 1024] (0 = automatic)");
  const int cap = max_block / tpr;
  const int want = opt == 0 ? block_threads / tpr : static_cast<int>(opt);
  return want < cap ? want : cap;
}

/// The grid for `rows` rows at `per_block` a block; throws past the x dimension's limit.
unsigned row_grid(std::int64_t rows, int per_block) {
  const std::int64_t blocks = (rows + per_block - 1) / per_block;
  if (blocks > std::numeric_limits<int>::max())
    throw invalid_input(std::string(arm_name) + ": too many rows for one grid");
  return static_cast<unsigned>(blocks);
}

void forward(const tensor_args &t, step_allocator & /*alloc*/, void *stream) {
  require_softmax(t, false, 256 * max_elems_per_thread, arm_name);
  dispatch_dtype(t.type, [&]<class T>() {
    dispatch_row<T>(t.cols, [&]<class S>() {
      constexpr int R = rows_in_flight<T>;
      const int rpb = rows_per_block(t, S::TPR);
      PREREG_CUDA_LAUNCH(
          softmax_fused_fwd<T, S, R>
          <<<row_grid(t.rows, rpb * R), rpb * S::TPR, 0, as_stream(stream)>>>(
              t.get<const T>(softmax::x), t.get<T>(softmax::y), t.rows, static_cast<int>(t.cols)));
    });
  });
}

void backward(const tensor_args &t, step_allocator & /*alloc*/, void *stream) {
  require_softmax(t, true, 256 * max_elems_per_thread, arm_name);
  dispatch_dtype(t.type, [&]<class T>() {
    dispatch_row<T>(t.cols, [&]<class S>() {
      constexpr int R = rows_in_flight<T>;
      const int rpb = rows_per_block(t, S::TPR);
      PREREG_CUDA_LAUNCH(softmax_fused_bwd<T, S, R>
                         <<<row_grid(t.rows, rpb * R), rpb * S::TPR, 0, as_stream(stream)>>>(
                             t.get<const T>(softmax::y), t.get<const T>(softmax::dy),
                             t.get<T>(softmax::dx), t.rows, static_cast<int>(t.cols)));
    });
  });
}

} // namespace

const arm_entry softmax_fused_entry{forward, backward};

} // namespace prereg::cuda
