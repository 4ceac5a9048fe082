// layernorm.fused: the forward in one pass with the row in registers (two-pass statistics over
// the registers, shifted by the row's first element); the backward in one pass reading x and dy
// once, over a persistent grid that keeps fp32 dgamma/dbeta partials per block in a [P, N]
// buffer, then a deterministic reduction kernel. Rows wider than the registers hold
// (cols > 8192) take the wide path: a block per row, statistics in a first sweep, a second
// sweep that re-reads the row (from L2) for the outputs.
#include "cuda/arm_entries.hpp"
#include "cuda/common.cuh"
#include "cuda/norm_fused.cuh"

namespace prereg::cuda {
namespace {

/// The minimum blocks per SM ln_fused_fwd declares in __launch_bounds__: 0 (none, the PTX of
/// every other shape is unchanged by it) except 1 for fp32 rows of 5 vectors over 256 threads,
/// where ptxas's default heuristic spilled 4 bytes at 48 registers (with it: 55, no spill).
template <class T, class S>
inline constexpr int ln_fwd_min_blocks = sizeof(T) == 4 && S::TPR == 256 && S::VPT == 5 ? 1 : 0;

/// BT threads per block, BT / TPR rows per block. Early: gamma and beta are loaded with x,
/// before the reductions (the small-row layout, where one DRAM round trip is the whole time).
template <class T, class S, int BT, bool Early>
__global__ void __launch_bounds__(BT, (ln_fwd_min_blocks<T, S>))
    ln_fused_fwd(const T *__restrict__ x, const T *__restrict__ gamma, const T *__restrict__ beta,
                 T *__restrict__ y, float *__restrict__ mean, float *__restrict__ rstd,
                 std::int64_t rows, int cols, float eps) {
  constexpr int RPB = BT / S::TPR;
  __shared__ float red[BT / 32];
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
  // Kept as bits (16-bit: two per register) until used: 1024-thread blocks have 64 registers.
  uint4 rg[Early ? S::VPT : 1], rb[Early ? S::VPT : 1];
  if constexpr (Early) {
#pragma unroll
    for (int j = 0; j < S::VPT; ++j) {
      const int c = (j * S::TPR + lane) * S::V;
      const bool in = c < cols;
      rg[j] = in ? load_raw(gamma + c) : make_uint4(0u, 0u, 0u, 0u);
      rb[j] = in ? load_raw(beta + c) : make_uint4(0u, 0u, 0u, 0u);
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
      float gv[S::V], bv[S::V], out[S::V];
      if constexpr (Early) {
        unpack_raw<T>(rg[j], gv);
        unpack_raw<T>(rb[j], bv);
      } else {
        load_vec(gamma + c, gv);
        load_vec(beta + c, bv);
      }
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        out[k] = v[j * S::V + k] * r * gv[k] + bv[k];
      store_vec_stream(yr + c, out);
    }
  }
}

/// Rows each row slot of ln_fused_bwd loads before using the first: rows_in_flight<T> (2 for
/// 16-bit types), but 4 for the widened 16-bit layout of 1 vector per thread
/// (norm_plan::ln_backward_layout, 2056-4096 cols), so that it keeps as many bytes in flight
/// as the 2-vector layouts.
template <class T, class S>
inline constexpr int ln_bwd_rows_in_flight = sizeof(T) == 2 && S::TPR == 512 && S::VPT == 1
                                                 ? 4
                                                 : rows_in_flight<T>;

/// Persistent: block b takes row groups b, b + P, ... (a group is ln_bwd_rows_in_flight rows
/// per slot, all loaded before the first is used; BT threads per block, BT / TPR slots); each
/// thread keeps fp32 partials of its columns; at the end the block sums its row slots in shared
/// memory (fixed order) and writes row b of part_g / part_b.
template <class T, class S, int BT>
__global__ void __launch_bounds__(BT)
    ln_fused_bwd(const T *__restrict__ x, const T *__restrict__ gamma, const T *__restrict__ dy,
                 const float *__restrict__ mean, const float *__restrict__ rstd, T *__restrict__ dx,
                 float *__restrict__ part_g, float *__restrict__ part_b, std::int64_t rows,
                 int cols) {
  constexpr int RPB = BT / S::TPR;
  constexpr int R = ln_bwd_rows_in_flight<T, S>;
  __shared__ float red[2 * BT / 32];
  __shared__ __align__(16) float tile[BT * S::E];
  const int slot = static_cast<int>(threadIdx.x) / S::TPR;
  const int lane = static_cast<int>(threadIdx.x) % S::TPR;
  const float inv_n = 1.f / static_cast<float>(cols);

  // The widened 16-bit layout of 2 vectors (ln_backward_layout) keeps gamma as bits, two per
  // register, and converts it where it is used: with it as floats it needed more than its 128
  // registers (ptxas spilled 4 bytes).
  constexpr bool packed_gamma = sizeof(T) == 2 && S::TPR == 512 && S::VPT == 2;
  float g[packed_gamma ? 1 : S::E], pg[S::E], pb[S::E];
  uint4 graw[packed_gamma ? S::VPT : 1];
#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const int c = (j * S::TPR + lane) * S::V;
    if constexpr (packed_gamma) {
      graw[j] = c < cols ? load_raw(gamma + c) : make_uint4(0u, 0u, 0u, 0u);
    } else if (c < cols) {
      load_vec(gamma + c, g + j * S::V);
    } else {
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        g[j * S::V + k] = 0.f;
    }
  }
  // gamma of this thread's vector j as floats
  const auto gamma_vec = [&](int j, float(&out)[S::V]) {
    if constexpr (packed_gamma) {
      unpack_raw<T>(graw[j], out);
    } else {
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        out[k] = g[j * S::V + k];
    }
  };
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
        float gj[S::V];
        gamma_vec(j, gj);
#pragma unroll
        for (int k = 0; k < S::V; ++k) {
          const int i = j * S::V + k;
          xv[i] = in ? xv[i] - m : 0.f;
          s2[0] += xv[i];
          s2[1] += gj[k] * dv[i];
        }
      }
      group_sum<S::TPR>(s2, red);
      const float c_resid = s2[0] * inv_n;
      float s1[1] = {0.f}; // sum(g * dy * xhat)
#pragma unroll
      for (int j = 0; j < S::VPT; ++j) {
        const bool in = (j * S::TPR + lane) * S::V < cols;
        float gj[S::V];
        gamma_vec(j, gj);
#pragma unroll
        for (int k = 0; k < S::V; ++k) {
          const int i = j * S::V + k;
          xv[i] = in ? (xv[i] - c_resid) * r : 0.f;
          s1[0] += gj[k] * dv[i] * xv[i];
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
            float gj[S::V], out[S::V];
            gamma_vec(j, gj);
#pragma unroll
            for (int k = 0; k < S::V; ++k) {
              const int i = j * S::V + k;
              out[k] = r * (gj[k] * dv[i] - a - xv[i] * b);
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
    for (int c = static_cast<int>(threadIdx.x); c < cols; c += BT) {
      float sum = 0.f;
#pragma unroll
      for (int sl = 0; sl < RPB; ++sl)
        sum += tile[sl * S::CAP + c];
      parts[w][static_cast<std::int64_t>(blockIdx.x) * cols + c] = sum;
    }
    __syncthreads();
  }
}

/// The wide path's forward: block b takes rows b, b + P, ...; sweep 1 loads the row (plain
/// loads: it is read again) and merges each thread's per-step two-pass statistics of x - x0
/// (x0 the row's first element, as on the register path) with chan_merge, then over the block
/// in a fixed order; sweep 2 re-reads x (from L2, last use) with gamma and beta and stores y.
template <class T>
__global__ void __launch_bounds__(norm_plan::wide_threads)
    ln_wide_fwd(const T *__restrict__ x, const T *__restrict__ gamma, const T *__restrict__ beta,
                T *__restrict__ y, float *__restrict__ mean, float *__restrict__ rstd,
                std::int64_t rows, int cols, float eps) {
  constexpr int V = vec_elems<T>;
  constexpr int BT = norm_plan::wide_threads;
  constexpr int CH = norm_plan::wide_chunk;
  __shared__ float red[3 * 32 + 2];
  const int tid = static_cast<int>(threadIdx.x);
  const int nv = cols / V;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *xr = x + row * cols;
    const float x0 = to_float(xr[0]);
    float n = 0.f, m = 0.f, m2 = 0.f;
    for (int base = tid; base < nv; base += BT * CH) {
      uint4 rx[CH];
#pragma unroll
      for (int j = 0; j < CH; ++j)
        rx[j] = base + j * BT < nv ? load_raw(xr + (base + j * BT) * V) : zero;
      // This step's two-pass statistics of x - x0, merged into the thread's running ones.
      float s = 0.f, cnt = 0.f;
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        if (base + j * BT < nv) {
          float v[V];
          unpack_raw<T>(rx[j], v);
#pragma unroll
          for (int k = 0; k < V; ++k)
            s += v[k] - x0;
          cnt += static_cast<float>(V);
        }
      }
      const float mc = s / cnt; // cnt >= V: vector `base` is in the row
      float m2c = 0.f;
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        if (base + j * BT < nv) {
          float v[V];
          unpack_raw<T>(rx[j], v);
#pragma unroll
          for (int k = 0; k < V; ++k) {
            const float d = (v[k] - x0) - mc;
            m2c += d * d;
          }
        }
      }
      chan_merge(n, m, m2, cnt, mc, m2c);
    }
    block_merge(n, m, m2, red);
    const float r = rsqrtf(m2 / static_cast<float>(cols) + eps);
    if (tid == 0) {
      mean[row] = x0 + m;
      rstd[row] = r;
    }
    T *yr = y + row * cols;
    for (int base = tid; base < nv; base += BT * CH) {
      uint4 rx[CH], rg[CH], rb[CH];
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        const int i = base + j * BT;
        rx[j] = i < nv ? load_raw_stream(xr + i * V) : zero;
        rg[j] = i < nv ? load_raw(gamma + i * V) : zero;
        rb[j] = i < nv ? load_raw(beta + i * V) : zero;
      }
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        const int i = base + j * BT;
        if (i < nv) {
          float v[V], g[V], b[V], out[V];
          unpack_raw<T>(rx[j], v);
          unpack_raw<T>(rg[j], g);
          unpack_raw<T>(rb[j], b);
#pragma unroll
          for (int k = 0; k < V; ++k)
            out[k] = ((v[k] - x0) - m) * r * g[k] + b[k];
          store_vec_stream(yr + i * V, out);
        }
      }
    }
  }
}

/// The wide path's backward: block b takes rows b, b + P, ...; sweep 1 loads x, dy and gamma
/// (plain loads: read again) and sums x - mean, g dy and g dy (x - mean) over the block (fixed
/// order); with resid = mean(x - mean) (the saved mean's rounding, as on the register path),
/// sum(g dy xhat) = rstd (sum(g dy (x - mean)) - resid sum(g dy)). Sweep 2 re-reads them (from
/// L2), stores dx and adds dy xhat and dy into row b of part_g / part_b: each column always
/// belongs to the same thread, which stores it at the block's first row and adds to it after,
/// so the partials need no zeroing, no atomics, and are summed in a fixed order.
template <class T>
__global__ void __launch_bounds__(norm_plan::wide_threads)
    ln_wide_bwd(const T *__restrict__ x, const T *__restrict__ gamma, const T *__restrict__ dy,
                const float *__restrict__ mean, const float *__restrict__ rstd, T *__restrict__ dx,
                float *__restrict__ part_g, float *__restrict__ part_b, std::int64_t rows,
                int cols) {
  constexpr int V = vec_elems<T>;
  constexpr int BT = norm_plan::wide_threads;
  constexpr int CH = norm_plan::wide_chunk;
  __shared__ float red[3 * BT / 32];
  const int tid = static_cast<int>(threadIdx.x);
  const int nv = cols / V;
  const float inv_n = 1.f / static_cast<float>(cols);
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  float *pg_row = part_g + static_cast<std::int64_t>(blockIdx.x) * cols;
  float *pb_row = part_b + static_cast<std::int64_t>(blockIdx.x) * cols;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const bool first = row == static_cast<std::int64_t>(blockIdx.x);
    const T *xr = x + row * cols;
    const T *dyr = dy + row * cols;
    const float mu = mean[row];
    const float r = rstd[row];
    float s3[3] = {0.f, 0.f, 0.f}; // sum(x - mean), sum(g dy), sum(g dy (x - mean))
    for (int base = tid; base < nv; base += BT * CH) {
      uint4 rx[CH], rd[CH], rg[CH];
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        const int i = base + j * BT;
        rx[j] = i < nv ? load_raw(xr + i * V) : zero;
        rd[j] = i < nv ? load_raw(dyr + i * V) : zero;
        rg[j] = i < nv ? load_raw(gamma + i * V) : zero;
      }
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        if (base + j * BT < nv) {
          float xv[V], dv[V], g[V];
          unpack_raw<T>(rx[j], xv);
          unpack_raw<T>(rd[j], dv);
          unpack_raw<T>(rg[j], g);
#pragma unroll
          for (int k = 0; k < V; ++k) {
            const float d = xv[k] - mu;
            const float gd = g[k] * dv[k];
            s3[0] += d;
            s3[1] += gd;
            s3[2] += gd * d;
          }
        }
      }
    }
    group_sum<BT>(s3, red);
    const float c_resid = s3[0] * inv_n;
    const float a = s3[1] * inv_n;
    const float b = r * (s3[2] - c_resid * s3[1]) * inv_n;
    T *dxr = dx + row * cols;
    for (int base = tid; base < nv; base += BT * CH) {
      uint4 rx[CH], rd[CH], rg[CH];
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        const int i = base + j * BT;
        rx[j] = i < nv ? load_raw_stream(xr + i * V) : zero;
        rd[j] = i < nv ? load_raw_stream(dyr + i * V) : zero;
        rg[j] = i < nv ? load_raw(gamma + i * V) : zero;
      }
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        const int i = base + j * BT;
        if (i < nv) {
          float xv[V], dv[V], g[V], out[V], pg[V], pb[V];
          unpack_raw<T>(rx[j], xv);
          unpack_raw<T>(rd[j], dv);
          unpack_raw<T>(rg[j], g);
#pragma unroll
          for (int k = 0; k < V; ++k) {
            const float xhat = ((xv[k] - mu) - c_resid) * r;
            out[k] = r * (g[k] * dv[k] - a - xhat * b);
            pg[k] = dv[k] * xhat;
            pb[k] = dv[k];
          }
          store_vec_stream(dxr + i * V, out);
          float *pgc = pg_row + i * V;
          float *pbc = pb_row + i * V;
#pragma unroll
          for (int k = 0; k < V; k += 4) {
            if (!first) {
              float og[4], ob[4];
              unpack_vec(*reinterpret_cast<const float4 *>(pgc + k), og);
              unpack_vec(*reinterpret_cast<const float4 *>(pbc + k), ob);
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                pg[k + e] += og[e];
                pb[k + e] += ob[e];
              }
            }
            store_f32x4(pgc + k, pg + k);
            store_f32x4(pbc + k, pb + k);
          }
        }
      }
    }
  }
}

void forward(const norm_tensors &t, step_allocator & /*alloc*/, void *stream) {
  const float eps = static_cast<float>(norm_eps(operation::layernorm));
  dispatch_dtype(t.type, [&]<class T>() {
    const auto *x = static_cast<const T *>(t.x);
    const auto *gamma = static_cast<const T *>(t.gamma);
    const auto *beta = static_cast<const T *>(t.beta);
    auto *y = static_cast<T *>(t.y);
    const int cols = static_cast<int>(t.cols);
    if (t.cols > norm_plan::register_cols) {
      const int grid = norm_plan::wide_grid(
          t.rows, t.cols * static_cast<std::int64_t>(sizeof(T)), sm_count(),
          blocks_per_sm<ln_wide_fwd<T>, norm_plan::wide_threads>(), l2_bytes());
      PREREG_CUDA_LAUNCH(ln_wide_fwd<T><<<grid, norm_plan::wide_threads, 0, as_stream(stream)>>>(
          x, gamma, beta, y, t.mean, t.rstd, t.rows, cols, eps));
      return;
    }
    dispatch_forward<T>(t.rows, t.cols, [&]<class S, int BT, bool Early>() {
      PREREG_CUDA_LAUNCH(ln_fused_fwd<T, S, BT, Early>
                         <<<grid_for(t.rows, BT / S::TPR), BT, 0, as_stream(stream)>>>(
                             x, gamma, beta, y, t.mean, t.rstd, t.rows, cols, eps));
    });
  });
}

void backward(const norm_tensors &t, step_allocator &alloc, void *stream) {
  dispatch_dtype(t.type, [&]<class T>() {
    const auto *x = static_cast<const T *>(t.x);
    const auto *gamma = static_cast<const T *>(t.gamma);
    const auto *dy = static_cast<const T *>(t.dy);
    auto *dx = static_cast<T *>(t.dx);
    const int cols = static_cast<int>(t.cols);
    if (t.cols > norm_plan::register_cols) {
      // Re-read per row: x and dy, plus the partial row's dgamma and dbeta (fp32).
      const std::int64_t row_bytes = t.cols * static_cast<std::int64_t>(2 * sizeof(T) + 8);
      const int parts = norm_plan::wide_grid(
          t.rows, row_bytes, sm_count(), blocks_per_sm<ln_wide_bwd<T>, norm_plan::wide_threads>(),
          l2_bytes());
      const std::size_t n = static_cast<std::size_t>(parts) * static_cast<std::size_t>(t.cols);
      auto *part = static_cast<float *>(alloc.allocate(2 * n * sizeof(float)));
      PREREG_CUDA_LAUNCH(ln_wide_bwd<T><<<parts, norm_plan::wide_threads, 0, as_stream(stream)>>>(
          x, gamma, dy, t.mean, t.rstd, dx, part, part + n, t.rows, cols));
      reduce_partials<T>(part, part + n, parts, cols, static_cast<T *>(t.dgamma),
                         static_cast<T *>(t.dbeta), as_stream(stream));
      alloc.release(part);
      return;
    }
    dispatch_ln_backward<T>(t.cols, [&]<class S, int BT>() {
      constexpr int RPB = BT / S::TPR;
      constexpr int R = ln_bwd_rows_in_flight<T, S>;
      const std::int64_t groups = (t.rows + RPB * R - 1) / (RPB * R);
      const std::int64_t resident =
          static_cast<std::int64_t>(blocks_per_sm<ln_fused_bwd<T, S, BT>, BT>()) * sm_count();
      const int parts = static_cast<int>(std::min(resident, groups));
      const std::size_t n = static_cast<std::size_t>(parts) * static_cast<std::size_t>(t.cols);
      auto *part = static_cast<float *>(alloc.allocate(2 * n * sizeof(float)));
      PREREG_CUDA_LAUNCH(ln_fused_bwd<T, S, BT><<<parts, BT, 0, as_stream(stream)>>>(
          x, gamma, dy, t.mean, t.rstd, dx, part, part + n, t.rows, cols));
      reduce_partials<T>(part, part + n, parts, cols, static_cast<T *>(t.dgamma),
                         static_cast<T *>(t.dbeta), as_stream(stream));
      alloc.release(part);
    });
  });
}

} // namespace

const arm_ops layernorm_fused_ops{forward, backward};

} // namespace prereg::cuda
