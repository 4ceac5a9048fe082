// layernorm.lockgroup: the design of the Triton layer-norm tutorial. Forward: one block per row
// (Triton's num_warps heuristic), three passes over the row (mean; variance; normalise).
// Backward: one block per row computes dx with the row in registers and adds its dgamma/dbeta
// contribution into one of GROUP_SIZE_M fp32 partial rows under a spin lock; a second kernel
// sums the GROUP_SIZE_M rows. Locks and partial buffers are allocated and zeroed in the step.
#include "cuda/arm_entries.hpp"
#include "cuda/common.cuh"

namespace prereg::cuda {
namespace {

/// Triton's heuristic: BLOCK_SIZE = next_pow2(N), num_warps = min(max(BLOCK_SIZE / 256, 1), 8).
[[nodiscard]] int tutorial_threads(std::int64_t cols) {
  std::int64_t block = 1;
  while (block < cols)
    block *= 2;
  std::int64_t warps = block / 256;
  warps = warps < 1 ? 1 : (warps > 8 ? 8 : warps);
  return static_cast<int>(warps * 32);
}

/// Triton's GROUP_SIZE_M: 64, 96 for N <= 8192, 128 for N <= 4096, 256 for N <= 1024.
[[nodiscard]] int group_size_m(std::int64_t cols) {
  if (cols <= 1024)
    return 256;
  if (cols <= 4096)
    return 128;
  if (cols <= 8192)
    return 96;
  return 64;
}

/// One block per row; each pass re-reads the row (as the tutorial's three loops do).
template <class T>
__global__ void __launch_bounds__(256)
    lg_fwd(const T *__restrict__ x, const T *__restrict__ gamma, const T *__restrict__ beta,
           T *__restrict__ y, float *__restrict__ mean, float *__restrict__ rstd, int cols,
           float eps) {
  constexpr int V = vec_elems<T>;
  __shared__ float red[32];
  const std::int64_t row = blockIdx.x;
  const T *xr = x + row * cols;
  const float x0 = to_float(xr[0]);
  const int step = static_cast<int>(blockDim.x) * V;
  float s = 0.f;
  for (int c = static_cast<int>(threadIdx.x) * V; c < cols; c += step) {
    float v[V];
    load_vec(xr + c, v);
#pragma unroll
    for (int k = 0; k < V; ++k)
      s += v[k] - x0;
  }
  const float shifted = block_sum(s, red) / static_cast<float>(cols);
  float q = 0.f;
  for (int c = static_cast<int>(threadIdx.x) * V; c < cols; c += step) {
    float v[V];
    load_vec(xr + c, v);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float d = (v[k] - x0) - shifted;
      q += d * d;
    }
  }
  const float r = rsqrtf(block_sum(q, red) / static_cast<float>(cols) + eps);
  if (threadIdx.x == 0) {
    mean[row] = x0 + shifted;
    rstd[row] = r;
  }
  for (int c = static_cast<int>(threadIdx.x) * V; c < cols; c += step) {
    float v[V], g[V], b[V];
    load_vec(xr + c, v);
    load_vec(gamma + c, g);
    load_vec(beta + c, b);
#pragma unroll
    for (int k = 0; k < V; ++k)
      v[k] = ((v[k] - x0) - shifted) * r * g[k] + b[k];
    store_vec(y + row * cols + c, v);
  }
}

/// One block (S::TPR threads) per row: dx, then the row's dy * xhat and dy added into partial
/// row (row % group) under the lock of that row; count[group] says whether it was written yet.
template <class T, class S>
__global__ void __launch_bounds__(256)
    lg_bwd_dx(const T *__restrict__ x, const T *__restrict__ gamma, const T *__restrict__ dy,
              const float *__restrict__ mean, const float *__restrict__ rstd, T *__restrict__ dx,
              float *part_g, float *part_b, int *locks, int group, int cols) {
  __shared__ float red[2 * 8];
  __shared__ int first;
  const std::int64_t row = blockIdx.x;
  const int lane = static_cast<int>(threadIdx.x);
  const float inv_n = 1.f / static_cast<float>(cols);
  float xv[S::E], dv[S::E], g[S::E];
#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const int c = (j * S::TPR + lane) * S::V;
    if (c < cols) {
      load_vec(x + row * cols + c, xv + j * S::V);
      load_vec(dy + row * cols + c, dv + j * S::V);
      load_vec(gamma + c, g + j * S::V);
    } else {
#pragma unroll
      for (int k = 0; k < S::V; ++k)
        xv[j * S::V + k] = dv[j * S::V + k] = g[j * S::V + k] = 0.f;
    }
  }
  const float m = mean[row], r = rstd[row];
  float s2[2] = {0.f, 0.f};
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
  const float cr = s2[0] * inv_n;
  float s1[1] = {0.f};
#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const bool in = (j * S::TPR + lane) * S::V < cols;
#pragma unroll
    for (int k = 0; k < S::V; ++k) {
      const int i = j * S::V + k;
      xv[i] = in ? (xv[i] - cr) * r : 0.f;
      s1[0] += g[i] * dv[i] * xv[i];
    }
  }
  group_sum<S::TPR>(s1, red);
  const float a = s2[1] * inv_n, b = s1[0] * inv_n;
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
      store_vec(dx + row * cols + c, out);
    }
  }

  // The lock-guarded accumulation (Triton: atomic_cas spin, count, load-add-store, xchg).
  const int lock_id = static_cast<int>(row % group);
  int *lock = locks + lock_id;
  int *count = locks + group + lock_id;
  if (threadIdx.x == 0) {
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    __threadfence();
    first = atomicExch(count, 1) == 0;
  }
  __syncthreads();
  float *pg = part_g + static_cast<std::int64_t>(lock_id) * cols;
  float *pb = part_b + static_cast<std::int64_t>(lock_id) * cols;
#pragma unroll
  for (int j = 0; j < S::VPT; ++j) {
    const int c = (j * S::TPR + lane) * S::V;
    if (c < cols) {
#pragma unroll
      for (int k = 0; k < S::V; k += 4) {
        float ng[4], nb[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int i = j * S::V + k + u;
          ng[u] = dv[i] * xv[i];
          nb[u] = dv[i];
        }
        if (!first) {
          float og[4], ob[4];
          load_f32x4_l2(pg + c + k, og);
          load_f32x4_l2(pb + c + k, ob);
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            ng[u] += og[u];
            nb[u] += ob[u];
          }
        }
        __stcg(reinterpret_cast<float4 *>(pg + c + k), make_float4(ng[0], ng[1], ng[2], ng[3]));
        __stcg(reinterpret_cast<float4 *>(pb + c + k), make_float4(nb[0], nb[1], nb[2], nb[3]));
      }
    }
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    atomicExch(lock, 0);
}

void forward(const norm_tensors &t, step_allocator & /*alloc*/, void *stream) {
  dispatch_dtype(t.type, [&]<class T>() {
    PREREG_CUDA_LAUNCH(
        lg_fwd<T>
        <<<static_cast<unsigned>(t.rows), tutorial_threads(t.cols), 0, as_stream(stream)>>>(
            static_cast<const T *>(t.x), static_cast<const T *>(t.gamma),
            static_cast<const T *>(t.beta), static_cast<T *>(t.y), t.mean, t.rstd,
            static_cast<int>(t.cols), static_cast<float>(norm_eps(operation::layernorm))));
  });
}

/// Calls f with the row_shape of `threads` threads holding a row of `cols`.
template <class T, int TPR, class F> bool with_threads(int threads, std::int64_t cols, F &f) {
  if (threads != TPR)
    return false;
  constexpr int V = vec_elems<T>;
  const int vpt = static_cast<int>((cols + TPR * V - 1) / (TPR * V));
  detail::dispatch_vpt<T, TPR, 1>(vpt, f);
  return true;
}

void backward(const norm_tensors &t, step_allocator &alloc, void *stream) {
  dispatch_dtype(t.type, [&]<class T>() {
    const cudaStream_t s = as_stream(stream);
    const int group = group_size_m(t.cols);
    const int cols = static_cast<int>(t.cols);
    const std::size_t n = static_cast<std::size_t>(group) * static_cast<std::size_t>(cols);
    auto *locks = static_cast<int *>(alloc.allocate(2 * static_cast<std::size_t>(group) * 4));
    auto *part = static_cast<float *>(alloc.allocate(2 * n * sizeof(float)));
    PREREG_CUDA_CALL(cudaMemsetAsync(locks, 0, 2 * static_cast<std::size_t>(group) * 4, s));
    PREREG_CUDA_CALL(cudaMemsetAsync(part, 0, 2 * n * sizeof(float), s));
    const int threads = tutorial_threads(t.cols);
    auto launch = [&]<class S>() {
      PREREG_CUDA_LAUNCH(lg_bwd_dx<T, S><<<static_cast<unsigned>(t.rows), S::TPR, 0, s>>>(
          static_cast<const T *>(t.x), static_cast<const T *>(t.gamma),
          static_cast<const T *>(t.dy), t.mean, t.rstd, static_cast<T *>(t.dx), part, part + n,
          locks, group, cols));
    };
    // Triton's num_warps gives 32..256 threads; each holds next_pow2(N) / threads elements.
    const bool launched = with_threads<T, 32>(threads, t.cols, launch) ||
                          with_threads<T, 64>(threads, t.cols, launch) ||
                          with_threads<T, 128>(threads, t.cols, launch) ||
                          with_threads<T, 256>(threads, t.cols, launch);
    if (!launched)
      throw std::logic_error("lockgroup: no row shape");
    reduce_partials<T>(part, part + n, group, cols, static_cast<T *>(t.dgamma),
                       static_cast<T *>(t.dbeta), s);
    alloc.release(part);
    alloc.release(locks);
  });
}

} // namespace

const arm_ops layernorm_lockgroup_ops{forward, backward};

} // namespace prereg::cuda
