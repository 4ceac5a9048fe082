// layernorm.unfused: the eager-style baseline, one kernel per stage with intermediates in device
// memory allocated inside the step: forward = mean; variance; normalise with affine. Backward =
// a dx kernel; dgamma/dbeta in their own kernel (fp32 partials per row chunk, then a reduction).
#include "cuda/arm_entries.hpp"
#include "cuda/common.cuh"

namespace prereg::cuda {
namespace {

constexpr int rows_per_block = block_threads / 32; // one warp per row in the row kernels

/// mean[row] (fp32) and resid[row] = true mean - mean[row] (the fp32 rounding of the mean),
/// summed shifted by the row's first element so rows with a large mean lose nothing.
template <class T>
__global__ void __launch_bounds__(block_threads)
    ln_mean_kernel(const T *__restrict__ x, std::int64_t rows, int cols, float *__restrict__ mean,
                   float *__restrict__ resid) {
  constexpr int V = vec_elems<T>;
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= rows)
    return;
  const T *xr = x + row * cols;
  const float x0 = to_float(xr[0]);
  float s = 0.f;
#pragma unroll 4
  for (int c = lane * V; c < cols; c += 32 * V) {
    float v[V];
    load_vec(xr + c, v);
#pragma unroll
    for (int k = 0; k < V; ++k)
      s += v[k] - x0;
  }
  s = warp_sum(s);
  if (lane == 0) {
    const float shifted = s / static_cast<float>(cols);
    const float m = x0 + shifted;
    mean[row] = m;
    resid[row] = (x0 - m) + shifted;
  }
}

/// var[row] = mean(((x - mean) - resid)^2): two-pass around the stored mean.
template <class T>
__global__ void __launch_bounds__(block_threads)
    ln_var_kernel(const T *__restrict__ x, std::int64_t rows, int cols,
                  const float *__restrict__ mean, const float *__restrict__ resid,
                  float *__restrict__ var) {
  constexpr int V = vec_elems<T>;
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= rows)
    return;
  const T *xr = x + row * cols;
  const float m = mean[row], cr = resid[row];
  float q = 0.f;
#pragma unroll 4
  for (int c = lane * V; c < cols; c += 32 * V) {
    float v[V];
    load_vec(xr + c, v);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float d = (v[k] - m) - cr;
      q += d * d;
    }
  }
  q = warp_sum(q);
  if (lane == 0)
    var[row] = q / static_cast<float>(cols);
}

/// y = ((x - mean) - resid) * rstd * gamma + beta, elementwise over 16-byte vectors; the
/// thread of a row's first vector writes rstd[row] = rsqrt(var + eps).
template <class T>
__global__ void __launch_bounds__(block_threads)
    ln_norm_kernel(const T *__restrict__ x, const T *__restrict__ gamma, const T *__restrict__ beta,
                   const float *__restrict__ mean, const float *__restrict__ resid,
                   const float *__restrict__ var, std::int64_t rows, int cols, float eps,
                   T *__restrict__ y, float *__restrict__ rstd) {
  constexpr int V = vec_elems<T>;
  const int per_row = cols / V;
  const std::int64_t total = rows * per_row;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / per_row;
    const int c = static_cast<int>(i % per_row) * V;
    const float r = rsqrtf(var[row] + eps);
    if (c == 0)
      rstd[row] = r;
    const float m = mean[row], cr = resid[row];
    float v[V], g[V], b[V];
    load_vec(x + row * cols + c, v);
    load_vec(gamma + c, g);
    load_vec(beta + c, b);
#pragma unroll
    for (int k = 0; k < V; ++k)
      v[k] = ((v[k] - m) - cr) * r * g[k] + b[k];
    store_vec(y + row * cols + c, v);
  }
}

/// dx per row (a warp per row, two passes over the row); writes resid[row] = mean(x - mean),
/// the saved mean's rounding, for the dgamma kernel.
template <class T>
__global__ void __launch_bounds__(block_threads)
    ln_bwd_dx_kernel(const T *__restrict__ x, const T *__restrict__ gamma, const T *__restrict__ dy,
                     const float *__restrict__ mean, const float *__restrict__ rstd,
                     std::int64_t rows, int cols, T *__restrict__ dx, float *__restrict__ resid) {
  constexpr int V = vec_elems<T>;
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= rows)
    return;
  const T *xr = x + row * cols;
  const T *dyr = dy + row * cols;
  const float m = mean[row], r = rstd[row];
  float s_d = 0.f, s_gdy = 0.f, s_gdyd = 0.f; // sum(x-m), sum(g dy), sum(g dy (x-m))
#pragma unroll 2
  for (int c = lane * V; c < cols; c += 32 * V) {
    float v[V], d[V], g[V];
    load_vec(xr + c, v);
    load_vec(dyr + c, d);
    load_vec(gamma + c, g);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float xm = v[k] - m;
      s_d += xm;
      s_gdy += g[k] * d[k];
      s_gdyd += g[k] * d[k] * xm;
    }
  }
  s_d = warp_sum(s_d);
  s_gdy = warp_sum(s_gdy);
  s_gdyd = warp_sum(s_gdyd);
  const float inv_n = 1.f / static_cast<float>(cols);
  const float cr = s_d * inv_n;
  const float a = s_gdy * inv_n;
  const float b = r * (s_gdyd - cr * s_gdy) * inv_n; // mean(g dy xhat)
  if (lane == 0)
    resid[row] = cr;
#pragma unroll 2
  for (int c = lane * V; c < cols; c += 32 * V) {
    float v[V], d[V], g[V];
    load_vec(xr + c, v);
    load_vec(dyr + c, d);
    load_vec(gamma + c, g);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float xhat = ((v[k] - m) - cr) * r;
      v[k] = r * (g[k] * d[k] - a - xhat * b);
    }
    store_vec(dx + row * cols + c, v);
  }
}

/// fp32 partial dgamma/dbeta of a chunk of rows: block (chunk, column block), one thread per
/// 16-byte column vector; writes row `chunk` of part_g / part_b.
template <class T>
__global__ void __launch_bounds__(block_threads)
    ln_bwd_dgdb_kernel(const T *__restrict__ x, const T *__restrict__ dy,
                       const float *__restrict__ mean, const float *__restrict__ rstd,
                       const float *__restrict__ resid, std::int64_t rows, int cols, int chunk,
                       float *__restrict__ part_g, float *__restrict__ part_b) {
  constexpr int V = vec_elems<T>;
  const int c = (static_cast<int>(blockIdx.y) * block_threads + static_cast<int>(threadIdx.x)) * V;
  if (c >= cols)
    return;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * chunk;
  const std::int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
  float pg[V] = {}, pb[V] = {};
#pragma unroll 4
  for (std::int64_t row = r0; row < r1; ++row) {
    float v[V], d[V];
    load_vec(x + row * cols + c, v);
    load_vec(dy + row * cols + c, d);
    const float m = mean[row], r = rstd[row], cr = resid[row];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      pg[k] += d[k] * (((v[k] - m) - cr) * r);
      pb[k] += d[k];
    }
  }
  const std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * cols + c;
#pragma unroll
  for (int k = 0; k < V; k += 4) {
    store_f32x4(part_g + o + k, pg + k);
    store_f32x4(part_b + o + k, pb + k);
  }
}

void forward(const norm_tensors &t, step_allocator &alloc, void *stream) {
  dispatch_dtype(t.type, [&]<class T>() {
    const cudaStream_t s = as_stream(stream);
    const int cols = static_cast<int>(t.cols);
    const auto *x = static_cast<const T *>(t.x);
    auto *resid = static_cast<float *>(alloc.allocate(static_cast<std::size_t>(t.rows) * 4));
    auto *var = static_cast<float *>(alloc.allocate(static_cast<std::size_t>(t.rows) * 4));
    const unsigned row_grid = grid_for(t.rows, rows_per_block);
    PREREG_CUDA_LAUNCH(ln_mean_kernel<T>
                       <<<row_grid, block_threads, 0, s>>>(x, t.rows, cols, t.mean, resid));
    PREREG_CUDA_LAUNCH(ln_var_kernel<T>
                       <<<row_grid, block_threads, 0, s>>>(x, t.rows, cols, t.mean, resid, var));
    const std::int64_t vectors = t.rows * (t.cols / vec_elems<T>);
    const unsigned grid = static_cast<unsigned>(
        std::min<std::int64_t>(grid_for(vectors, block_threads), 64LL * sm_count()));
    PREREG_CUDA_LAUNCH(ln_norm_kernel<T><<<grid, block_threads, 0, s>>>(
        x, static_cast<const T *>(t.gamma), static_cast<const T *>(t.beta), t.mean, resid, var,
        t.rows, cols, static_cast<float>(norm_eps(operation::layernorm)), static_cast<T *>(t.y),
        t.rstd));
    alloc.release(var);
    alloc.release(resid);
  });
}

void backward(const norm_tensors &t, step_allocator &alloc, void *stream) {
  dispatch_dtype(t.type, [&]<class T>() {
    constexpr int V = vec_elems<T>;
    const cudaStream_t s = as_stream(stream);
    const int cols = static_cast<int>(t.cols);
    const auto *x = static_cast<const T *>(t.x);
    const auto *dy = static_cast<const T *>(t.dy);
    auto *resid = static_cast<float *>(alloc.allocate(static_cast<std::size_t>(t.rows) * 4));
    PREREG_CUDA_LAUNCH(ln_bwd_dx_kernel<T>
                       <<<grid_for(t.rows, rows_per_block), block_threads, 0, s>>>(
                           x, static_cast<const T *>(t.gamma), dy, t.mean, t.rstd, t.rows, cols,
                           static_cast<T *>(t.dx), resid));
    const int chunk = column_chunk(t.rows);
    const int chunks = static_cast<int>((t.rows + chunk - 1) / chunk);
    const std::size_t n = static_cast<std::size_t>(chunks) * static_cast<std::size_t>(cols);
    auto *part = static_cast<float *>(alloc.allocate(2 * n * sizeof(float)));
    const dim3 grid(static_cast<unsigned>(chunks), grid_for(cols / V, block_threads));
    PREREG_CUDA_LAUNCH(ln_bwd_dgdb_kernel<T><<<grid, block_threads, 0, s>>>(
        x, dy, t.mean, t.rstd, resid, t.rows, cols, chunk, part, part + n));
    reduce_partials<T>(part, part + n, chunks, cols, static_cast<T *>(t.dgamma),
                       static_cast<T *>(t.dbeta), s);
    alloc.release(part);
    alloc.release(resid);
  });
}

} // namespace

const arm_ops layernorm_unfused_ops{forward, backward};

} // namespace prereg::cuda
