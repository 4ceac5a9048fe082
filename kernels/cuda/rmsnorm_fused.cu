// rmsnorm.fused: the forward in one pass with the row in registers; the backward in one pass
// reading x and dy once, over a persistent grid with fp32 dweight partials per block in a
// [P, N] buffer, then a deterministic reduction kernel (as layernorm.fused).
#include "cuda/arm_entries.hpp"
#include "cuda/common.cuh"

namespace prereg::cuda {
namespace {

template <class T, class S>
__global__ void __launch_bounds__(block_threads)
    rms_fused_fwd(const T *__restrict__ x, const T *__restrict__ weight, T *__restrict__ y,
                  float *__restrict__ rstd, std::int64_t rows, int cols, float eps) {
  constexpr int RPB = block_threads / S::TPR;
  __shared__ float red[block_threads / 32];
  const int slot = static_cast<int>(threadIdx.x) / S::TPR;
  const int lane = static_cast<int>(threadIdx.x) % S::TPR;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * RPB + slot;
  const bool valid = row < rows;
  float v[S::E];
  float q[1] = {0.f};
#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const int c = (j * S::TPR + lane) * S::V;
    if (valid && c < cols) {
      load_vec_stream(x + row * cols + c, v + j * S::V);
    } else {
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        v[j * S::V + k] = 0.f;
    }
  }
#pragma unroll
  for (int i = 0; i < S::E; ++i)
    q[0] += v[i] * v[i];
  group_sum<S::TPR>(q, red);
  const float r = rsqrtf(q[0] / static_cast<float>(cols) + eps);
  if (!valid)
    return;
  if (lane == 0)
    rstd[row] = r;
#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const int c = (j * S::TPR + lane) * S::V;
    if (c < cols) {
      float w[S::V], out[S::V];
      load_vec(weight + c, w);
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        out[k] = v[j * S::V + k] * r * w[k];
      store_vec_stream(y + row * cols + c, out);
    }
  }
}

/// dx = rstd * (w dy - xhat * mean(w dy xhat)), xhat = x * rstd; rows in flight and dweight
/// partials as in layernorm.fused's backward.
template <class T, class S>
__global__ void __launch_bounds__(block_threads)
    rms_fused_bwd(const T *__restrict__ x, const T *__restrict__ weight, const T *__restrict__ dy,
                  const float *__restrict__ rstd, T *__restrict__ dx, float *__restrict__ part_w,
                  std::int64_t rows, int cols) {
  constexpr int RPB = block_threads / S::TPR;
  constexpr int R = rows_in_flight<T>;
  __shared__ float red[block_threads / 32];
  __shared__ __align__(16) float tile[block_threads * S::E];
  const int slot = static_cast<int>(threadIdx.x) / S::TPR;
  const int lane = static_cast<int>(threadIdx.x) % S::TPR;
  const float inv_n = 1.f / static_cast<float>(cols);

  float w[S::E], pw[S::E];
#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const int c = (j * S::TPR + lane) * S::V;
    if (c < cols) {
      load_vec(weight + c, w + j * S::V);
    } else {
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        w[j * S::V + k] = 0.f;
    }
  }
#pragma unroll
  for (int i = 0; i < S::E; ++i)
    pw[i] = 0.f;

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
      const float r = valid ? rstd[row] : 0.f;
      float s1[1] = {0.f};
#pragma unroll
      for (int i = 0; i < S::E; ++i) {
        xv[i] *= r;
        s1[0] += w[i] * dv[i] * xv[i];
      }
      group_sum<S::TPR>(s1, red);
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
              out[k] = r * (w[i] * dv[i] - xv[i] * b);
            }
            store_vec_stream(dx + row * cols + c, out);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < S::E; ++i)
        pw[i] += dv[i] * xv[i];
    }
  }

#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const int c = (j * S::TPR + lane) * S::V;
    if (c < cols) {
#pragma unroll
      for (int k = 0; k < S::V; k += 4)
        store_f32x4(tile + slot * S::CAP + c + k, pw + j * S::V + k);
    }
  }
  __syncthreads();
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += block_threads) {
    float sum = 0.f;
#pragma unroll
    for (int sl = 0; sl < RPB; ++sl)
      sum += tile[sl * S::CAP + c];
    part_w[static_cast<std::int64_t>(blockIdx.x) * cols + c] = sum;
  }
}

void forward(const norm_tensors &t, step_allocator & /*alloc*/, void *stream) {
  dispatch_dtype(t.type, [&]<class T>() {
    dispatch_row<T>(t.cols, [&]<class S>() {
      constexpr int RPB = block_threads / S::TPR;
      PREREG_CUDA_LAUNCH(rms_fused_fwd<T, S>
                         <<<grid_for(t.rows, RPB), block_threads, 0, as_stream(stream)>>>(
                             static_cast<const T *>(t.x), static_cast<const T *>(t.gamma),
                             static_cast<T *>(t.y), t.rstd, t.rows, static_cast<int>(t.cols),
                             static_cast<float>(norm_eps(operation::rmsnorm))));
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
          static_cast<int>(std::min<std::int64_t>(resident_blocks<rms_fused_bwd<T, S>>(), groups));
      const std::size_t n = static_cast<std::size_t>(parts) * static_cast<std::size_t>(t.cols);
      auto *part = static_cast<float *>(alloc.allocate(n * sizeof(float)));
      PREREG_CUDA_LAUNCH(rms_fused_bwd<T, S><<<parts, block_threads, 0, as_stream(stream)>>>(
          static_cast<const T *>(t.x), static_cast<const T *>(t.gamma),
          static_cast<const T *>(t.dy), t.rstd, static_cast<T *>(t.dx), part, t.rows,
          static_cast<int>(t.cols)));
      reduce_partials<T>(part, nullptr, parts, static_cast<int>(t.cols), static_cast<T *>(t.dgamma),
                         nullptr, as_stream(stream));
      alloc.release(part);
    });
  });
}

} // namespace

const arm_ops rmsnorm_fused_ops{forward, backward};

} // namespace prereg::cuda
