// rmsnorm.fused: the forward in one pass with the row in registers; the backward in one pass
// reading x and dy once, over a persistent grid with fp32 dweight partials per block in a
// [P, N] buffer, then a deterministic reduction kernel (as layernorm.fused). Rows wider than
// the registers hold (cols > 8192) take the wide path: a block per row, the sum of squares in a
// first sweep, a second sweep that re-reads the row (from L2) for the outputs.
#include "cuda/arm_entries.hpp"
#include "cuda/common.cuh"
#include "cuda/norm_fused.cuh"

namespace prereg::cuda {
namespace {

/// BT threads per block, BT / TPR rows per block. Early: the weight is loaded with x, before
/// the reduction (the small-row layout, where one DRAM round trip is the whole time).
template <class T, class S, int BT, bool Early>
__global__ void __launch_bounds__(BT)
    rms_fused_fwd(const T *__restrict__ x, const T *__restrict__ weight, T *__restrict__ y,
                  float *__restrict__ rstd, std::int64_t rows, int cols, float eps) {
  constexpr int RPB = BT / S::TPR;
  __shared__ float red[BT / 32];
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
  // Kept as bits (16-bit: two per register) until used: 1024-thread blocks have 64 registers.
  uint4 rw[Early ? S::VPT : 1];
  if constexpr (Early) {
#pragma unroll
    for (int j = 0; j < S::VPT; ++j) {
      const int c = (j * S::TPR + lane) * S::V;
      rw[j] = c < cols ? load_raw(weight + c) : make_uint4(0u, 0u, 0u, 0u);
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
      float wv[S::V], out[S::V];
      if constexpr (Early)
        unpack_raw<T>(rw[j], wv);
      else
        load_vec(weight + c, wv);
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        out[k] = v[j * S::V + k] * r * wv[k];
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

/// The wide path's forward: block b takes rows b, b + P, ...; sweep 1 sums x^2 (plain loads:
/// the row is read again) over the block in a fixed order; sweep 2 re-reads x (from L2, last
/// use) with the weight and stores y.
template <class T>
__global__ void __launch_bounds__(norm_plan::wide_threads)
    rms_wide_fwd(const T *__restrict__ x, const T *__restrict__ weight, T *__restrict__ y,
                 float *__restrict__ rstd, std::int64_t rows, int cols, float eps) {
  constexpr int V = vec_elems<T>;
  constexpr int BT = norm_plan::wide_threads;
  constexpr int CH = norm_plan::wide_chunk;
  __shared__ float red[BT / 32];
  const int tid = static_cast<int>(threadIdx.x);
  const int nv = cols / V;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *xr = x + row * cols;
    float q[1] = {0.f};
    for (int base = tid; base < nv; base += BT * CH) {
      uint4 rx[CH];
#pragma unroll
      for (int j = 0; j < CH; ++j)
        rx[j] = base + j * BT < nv ? load_raw(xr + (base + j * BT) * V) : zero;
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        float v[V];
        unpack_raw<T>(rx[j], v); // zero bits past the row: they add 0
#pragma unroll
        for (int k = 0; k < V; ++k)
          q[0] += v[k] * v[k];
      }
    }
    group_sum<BT>(q, red);
    const float r = rsqrtf(q[0] / static_cast<float>(cols) + eps);
    if (tid == 0)
      rstd[row] = r;
    T *yr = y + row * cols;
    for (int base = tid; base < nv; base += BT * CH) {
      uint4 rx[CH], rw[CH];
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        const int i = base + j * BT;
        rx[j] = i < nv ? load_raw_stream(xr + i * V) : zero;
        rw[j] = i < nv ? load_raw(weight + i * V) : zero;
      }
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        const int i = base + j * BT;
        if (i < nv) {
          float v[V], w[V], out[V];
          unpack_raw<T>(rx[j], v);
          unpack_raw<T>(rw[j], w);
#pragma unroll
          for (int k = 0; k < V; ++k)
            out[k] = v[k] * r * w[k];
          store_vec_stream(yr + i * V, out);
        }
      }
    }
  }
}

/// The wide path's backward: block b takes rows b, b + P, ...; sweep 1 sums w dy xhat
/// (xhat = x rstd; plain loads: read again) over the block in a fixed order; sweep 2 re-reads
/// x and dy (from L2), stores dx and adds dy xhat into row b of part_w (each column always
/// belongs to the same thread: stored at the block's first row, added to after; fixed order).
template <class T>
__global__ void __launch_bounds__(norm_plan::wide_threads)
    rms_wide_bwd(const T *__restrict__ x, const T *__restrict__ weight, const T *__restrict__ dy,
                 const float *__restrict__ rstd, T *__restrict__ dx, float *__restrict__ part_w,
                 std::int64_t rows, int cols) {
  constexpr int V = vec_elems<T>;
  constexpr int BT = norm_plan::wide_threads;
  constexpr int CH = norm_plan::wide_chunk;
  __shared__ float red[BT / 32];
  const int tid = static_cast<int>(threadIdx.x);
  const int nv = cols / V;
  const float inv_n = 1.f / static_cast<float>(cols);
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  float *pw_row = part_w + static_cast<std::int64_t>(blockIdx.x) * cols;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const bool first = row == static_cast<std::int64_t>(blockIdx.x);
    const T *xr = x + row * cols;
    const T *dyr = dy + row * cols;
    const float r = rstd[row];
    float s1[1] = {0.f}; // sum(w dy xhat)
    for (int base = tid; base < nv; base += BT * CH) {
      uint4 rx[CH], rd[CH], rw[CH];
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        const int i = base + j * BT;
        rx[j] = i < nv ? load_raw(xr + i * V) : zero;
        rd[j] = i < nv ? load_raw(dyr + i * V) : zero;
        rw[j] = i < nv ? load_raw(weight + i * V) : zero;
      }
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        float xv[V], dv[V], w[V];
        unpack_raw<T>(rx[j], xv); // zero bits past the row: they add 0
        unpack_raw<T>(rd[j], dv);
        unpack_raw<T>(rw[j], w);
#pragma unroll
        for (int k = 0; k < V; ++k)
          s1[0] += w[k] * dv[k] * (xv[k] * r);
      }
    }
    group_sum<BT>(s1, red);
    const float b = s1[0] * inv_n;
    T *dxr = dx + row * cols;
    for (int base = tid; base < nv; base += BT * CH) {
      uint4 rx[CH], rd[CH], rw[CH];
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        const int i = base + j * BT;
        rx[j] = i < nv ? load_raw_stream(xr + i * V) : zero;
        rd[j] = i < nv ? load_raw_stream(dyr + i * V) : zero;
        rw[j] = i < nv ? load_raw(weight + i * V) : zero;
      }
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        const int i = base + j * BT;
        if (i < nv) {
          float xv[V], dv[V], w[V], out[V], pw[V];
          unpack_raw<T>(rx[j], xv);
          unpack_raw<T>(rd[j], dv);
          unpack_raw<T>(rw[j], w);
#pragma unroll
          for (int k = 0; k < V; ++k) {
            const float xhat = xv[k] * r;
            out[k] = r * (w[k] * dv[k] - xhat * b);
            pw[k] = dv[k] * xhat;
          }
          store_vec_stream(dxr + i * V, out);
          float *pwc = pw_row + i * V;
#pragma unroll
          for (int k = 0; k < V; k += 4) {
            if (!first) {
              float ow[4];
              unpack_vec(*reinterpret_cast<const float4 *>(pwc + k), ow);
#pragma unroll
              for (int e = 0; e < 4; ++e)
                pw[k + e] += ow[e];
            }
            store_f32x4(pwc + k, pw + k);
          }
        }
      }
    }
  }
}

void forward(const norm_tensors &t, step_allocator & /*alloc*/, void *stream) {
  const float eps = static_cast<float>(norm_eps(operation::rmsnorm));
  dispatch_dtype(t.type, [&]<class T>() {
    const auto *x = static_cast<const T *>(t.x);
    const auto *weight = static_cast<const T *>(t.gamma);
    auto *y = static_cast<T *>(t.y);
    const int cols = static_cast<int>(t.cols);
    if (t.cols > norm_plan::register_cols) {
      const int grid = norm_plan::wide_grid(
          t.rows, t.cols * static_cast<std::int64_t>(sizeof(T)), sm_count(),
          blocks_per_sm<rms_wide_fwd<T>, norm_plan::wide_threads>(), l2_bytes());
      PREREG_CUDA_LAUNCH(rms_wide_fwd<T><<<grid, norm_plan::wide_threads, 0, as_stream(stream)>>>(
          x, weight, y, t.rstd, t.rows, cols, eps));
      return;
    }
    dispatch_forward<T>(t.rows, t.cols, [&]<class S, int BT, bool Early>() {
      PREREG_CUDA_LAUNCH(rms_fused_fwd<T, S, BT, Early>
                         <<<grid_for(t.rows, BT / S::TPR), BT, 0, as_stream(stream)>>>(
                             x, weight, y, t.rstd, t.rows, cols, eps));
    });
  });
}

void backward(const norm_tensors &t, step_allocator &alloc, void *stream) {
  dispatch_dtype(t.type, [&]<class T>() {
    const auto *x = static_cast<const T *>(t.x);
    const auto *weight = static_cast<const T *>(t.gamma);
    const auto *dy = static_cast<const T *>(t.dy);
    auto *dx = static_cast<T *>(t.dx);
    const int cols = static_cast<int>(t.cols);
    if (t.cols > norm_plan::register_cols) {
      // Re-read per row: x and dy, plus the partial row's dweight (fp32).
      const std::int64_t row_bytes = t.cols * static_cast<std::int64_t>(2 * sizeof(T) + 4);
      const int parts = norm_plan::wide_grid(
          t.rows, row_bytes, sm_count(), blocks_per_sm<rms_wide_bwd<T>, norm_plan::wide_threads>(),
          l2_bytes());
      const std::size_t n = static_cast<std::size_t>(parts) * static_cast<std::size_t>(t.cols);
      auto *part = static_cast<float *>(alloc.allocate(n * sizeof(float)));
      PREREG_CUDA_LAUNCH(rms_wide_bwd<T><<<parts, norm_plan::wide_threads, 0, as_stream(stream)>>>(
          x, weight, dy, t.rstd, dx, part, t.rows, cols));
      reduce_partials<T>(part, nullptr, parts, cols, static_cast<T *>(t.dgamma), nullptr,
                         as_stream(stream));
      alloc.release(part);
      return;
    }
    dispatch_row<T>(t.cols, [&]<class S>() {
      constexpr int RPB = block_threads / S::TPR;
      const std::int64_t groups =
          (t.rows + RPB * rows_in_flight<T> - 1) / (RPB * rows_in_flight<T>);
      const int parts =
          static_cast<int>(std::min<std::int64_t>(resident_blocks<rms_fused_bwd<T, S>>(), groups));
      const std::size_t n = static_cast<std::size_t>(parts) * static_cast<std::size_t>(t.cols);
      auto *part = static_cast<float *>(alloc.allocate(n * sizeof(float)));
      PREREG_CUDA_LAUNCH(rms_fused_bwd<T, S><<<parts, block_threads, 0, as_stream(stream)>>>(
          x, weight, dy, t.rstd, dx, part, t.rows, cols));
      reduce_partials<T>(part, nullptr, parts, cols, static_cast<T *>(t.dgamma), nullptr,
                         as_stream(stream));
      alloc.release(part);
    });
  });
}

} // namespace

const arm_ops rmsnorm_fused_ops{forward, backward};

} // namespace prereg::cuda
