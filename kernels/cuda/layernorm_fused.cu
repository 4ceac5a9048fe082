// layernorm.fused: the forward in one pass with the row in registers (two-pass statistics over
// the registers, shifted by the row's first element); the backward in one pass reading x and dy
// once, over a persistent grid that keeps fp32 dgamma/dbeta partials per block in a [P, N]
// buffer, then a deterministic reduction kernel.
#include "cuda/arm_entries.hpp"
#include "cuda/common.cuh"

namespace prereg::cuda {
namespace {

template <class T, class S>
__global__ void __launch_bounds__(block_threads)
    ln_fused_fwd(const T *__restrict__ x, const T *__restrict__ gamma, const T *__restrict__ beta,
                 T *__restrict__ y, float *__restrict__ mean, float *__restrict__ rstd,
                 std::int64_t rows, int cols, float eps) {
  constexpr int RPB = block_threads / S::TPR;
  __shared__ float red[block_threads / 32];
  const int slot = static_cast<int>(threadIdx.x) / S::TPR;
  const int lane = static_cast<int>(threadIdx.x) % S::TPR;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * RPB + slot;
  const bool valid = row < rows;
  const T *xr = x + (valid ? row : 0) * cols;
  const float x0 = to_float(xr[0]); // the shift: exact differences for rows with a large mean

  float v[S::E];
#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const int c = (j * S::TPR + lane) * S::V;
    if (valid && c < cols) {
      load_vec_stream(xr + c, v + j * S::V);
    } else {
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        v[j * S::V + k] = x0;
    }
  }
  float s[1] = {0.f};
#pragma unroll
  for (int i = 0; i < S::E; ++i) {
    v[i] -= x0;
    s[0] += v[i];
  }
  group_sum<S::TPR>(s, red);
  const float shifted_mean = s[0] / static_cast<float>(cols);
  float q[1] = {0.f};
#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const bool in = (j * S::TPR + lane) * S::V < cols;
#pragma unroll
    for (int k = 0; k < S::V; ++k) {
      float &d = v[j * S::V + k];
      d = in ? d - shifted_mean : 0.f;
      q[0] += d * d;
    }
  }
  group_sum<S::TPR>(q, red);
  const float r = rsqrtf(q[0] / static_cast<float>(cols) + eps);
  if (!valid)
    return;
  if (lane == 0) {
    mean[row] = x0 + shifted_mean;
    rstd[row] = r;
  }
  T *yr = y + row * cols;
#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const int c = (j * S::TPR + lane) * S::V;
    if (c < cols) {
      float g[S::V], b[S::V], out[S::V];
      load_vec(gamma + c, g);
      load_vec(beta + c, b);
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        out[k] = v[j * S::V + k] * r * g[k] + b[k];
      store_vec_stream(yr + c, out);
    }
  }
}

/// Persistent: block b takes row groups b, b + P, ... (a group is rows_in_flight<T> rows per
/// slot, all loaded before the first is used); each thread keeps fp32 partials of its columns;
/// at the end the block sums its row slots in shared memory (fixed order) and writes row b of
/// part_g / part_b.
template <class T, class S>
__global__ void __launch_bounds__(block_threads)
    ln_fused_bwd(const T *__restrict__ x, const T *__restrict__ gamma, const T *__restrict__ dy,
                 const float *__restrict__ mean, const float *__restrict__ rstd, T *__restrict__ dx,
                 float *__restrict__ part_g, float *__restrict__ part_b, std::int64_t rows,
                 int cols) {
  constexpr int RPB = block_threads / S::TPR;
  constexpr int R = rows_in_flight<T>;
  __shared__ float red[2 * block_threads / 32];
  __shared__ __align__(16) float tile[block_threads * S::E];
  const int slot = static_cast<int>(threadIdx.x) / S::TPR;
  const int lane = static_cast<int>(threadIdx.x) % S::TPR;
  const float inv_n = 1.f / static_cast<float>(cols);

  float g[S::E], pg[S::E], pb[S::E];
#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const int c = (j * S::TPR + lane) * S::V;
    if (c < cols) {
      load_vec(gamma + c, g + j * S::V);
    } else {
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        g[j * S::V + k] = 0.f;
    }
  }
#pragma unroll
  for (int i = 0; i < S::E; ++i)
    pg[i] = pb[i] = 0.f;

  for (std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * RPB * R; base < rows;
       base += static_cast<std::int64_t>(gridDim.x) * RPB * R) {
    // Issue the loads of all R rows of this slot before the first use.
    uint4 rx[R][S::VPT], rd[R][S::VPT];
#pragma unroll
    for (int q = 0; q < R; ++q) {
      const std::int64_t row = base + q * RPB + slot;
#pragma unroll
      for (int j = 0; j < S::VPT; ++j) {
        const int c = (j * S::TPR + lane) * S::V;
        if (row < rows && c < cols) {
          rx[q][j] = load_raw_stream(x + row * cols + c);
          rd[q][j] = load_raw_stream(dy + row * cols + c);
        } else {
          rx[q][j] = rd[q][j] = make_uint4(0u, 0u, 0u, 0u);
        }
      }
    }
#pragma unroll
    for (int q = 0; q < R; ++q) {
      const std::int64_t row = base + q * RPB + slot;
      const bool valid = row < rows;
      float xv[S::E], dv[S::E];
#pragma unroll
      for (int j = 0; j < S::VPT; ++j) {
        unpack_raw<T>(rx[q][j], xv + j * S::V);
        unpack_raw<T>(rd[q][j], dv + j * S::V);
      }
      const float m = valid ? mean[row] : 0.f;
      const float r = valid ? rstd[row] : 0.f;
      float s2[2] = {0.f, 0.f}; // sum(x - mean) (the saved mean's rounding), sum(g * dy)
#pragma unroll
      for (int j = 0; j < S::VPT; ++j) {
        const bool in = (j * S::TPR + lane) * S::V < cols;
#pragma unroll
        for (int k = 0; k < S::V; ++k) {
          const int i = j * S::V + k;
          xv[i] = in ? xv[i] - m : 0.f;
          s2[0] += xv[i];
          s2[1] += g[i] * dv[i];
        }
      }
      group_sum<S::TPR>(s2, red);
      const float c_resid = s2[0] * inv_n;
      float s1[1] = {0.f}; // sum(g * dy * xhat)
#pragma unroll
      for (int j = 0; j < S::VPT; ++j) {
        const bool in = (j * S::TPR + lane) * S::V < cols;
#pragma unroll
        for (int k = 0; k < S::V; ++k) {
          const int i = j * S::V + k;
          xv[i] = in ? (xv[i] - c_resid) * r : 0.f;
          s1[0] += g[i] * dv[i] * xv[i];
        }
      }
      group_sum<S::TPR>(s1, red);
      const float a = s2[1] * inv_n;
      const float b = s1[0] * inv_n;
      if (valid) {
#pragma unroll
        for (int j = 0; j < S::VPT; ++j) {
          const int c = (j * S::TPR + lane) * S::V;
          if (c < cols) {
            float out[S::V];
#pragma unroll
            for (int k = 0; k < S::V; ++k) {
              const int i = j * S::V + k;
              out[k] = r * (g[i] * dv[i] - a - xv[i] * b);
            }
            store_vec_stream(dx + row * cols + c, out);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < S::E; ++i) {
        pg[i] += dv[i] * xv[i];
        pb[i] += dv[i];
      }
    }
  }

  // Sum the block's row slots per column (fixed order) and write this block's partial row.
  float *const parts[2] = {part_g, part_b};
#pragma unroll
  for (int w = 0; w < 2; ++w) {
    const float *p = w == 0 ? pg : pb;
#pragma unroll
    for (int j = 0; j < S::VPT; ++j) {
      const int c = (j * S::TPR + lane) * S::V;
      if (c < cols) {
#pragma unroll
        for (int k = 0; k < S::V; k += 4)
          store_f32x4(tile + slot * S::CAP + c + k, p + j * S::V + k);
      }
    }
    __syncthreads();
    for (int c = static_cast<int>(threadIdx.x); c < cols; c += block_threads) {
      float sum = 0.f;
#pragma unroll
      for (int sl = 0; sl < RPB; ++sl)
        sum += tile[sl * S::CAP + c];
      parts[w][static_cast<std::int64_t>(blockIdx.x) * cols + c] = sum;
    }
    __syncthreads();
  }
}

void forward(const norm_tensors &t, step_allocator & /*alloc*/, void *stream) {
  dispatch_dtype(t.type, [&]<class T>() {
    dispatch_row<T>(t.cols, [&]<class S>() {
      constexpr int RPB = block_threads / S::TPR;
      PREREG_CUDA_LAUNCH(
          ln_fused_fwd<T, S><<<grid_for(t.rows, RPB), block_threads, 0, as_stream(stream)>>>(
              static_cast<const T *>(t.x), static_cast<const T *>(t.gamma),
              static_cast<const T *>(t.beta), static_cast<T *>(t.y), t.mean, t.rstd, t.rows,
              static_cast<int>(t.cols), static_cast<float>(norm_eps(operation::layernorm))));
    });
  });
}

void backward(const norm_tensors &t, step_allocator &alloc, void *stream) {
  dispatch_dtype(t.type, [&]<class T>() {
    dispatch_row<T>(t.cols, [&]<class S>() {
      constexpr int RPB = block_threads / S::TPR;
      const std::int64_t groups =
          (t.rows + RPB * rows_in_flight<T> - 1) / (RPB * rows_in_flight<T>);
      const int parts =
          static_cast<int>(std::min<std::int64_t>(resident_blocks<ln_fused_bwd<T, S>>(), groups));
      const std::size_t n = static_cast<std::size_t>(parts) * static_cast<std::size_t>(t.cols);
      auto *part = static_cast<float *>(alloc.allocate(2 * n * sizeof(float)));
      PREREG_CUDA_LAUNCH(ln_fused_bwd<T, S><<<parts, block_threads, 0, as_stream(stream)>>>(
          static_cast<const T *>(t.x), static_cast<const T *>(t.gamma),
          static_cast<const T *>(t.dy), t.mean, t.rstd, static_cast<T *>(t.dx), part, part + n,
          t.rows, static_cast<int>(t.cols)));
      reduce_partials<T>(part, part + n, parts, static_cast<int>(t.cols),
                         static_cast<T *>(t.dgamma), static_cast<T *>(t.dbeta), as_stream(stream));
      alloc.release(part);
    });
  });
}

} // namespace

const arm_ops layernorm_fused_ops{forward, backward};

} // namespace prereg::cuda
