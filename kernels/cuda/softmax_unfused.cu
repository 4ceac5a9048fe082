// softmax.unfused: the eager-style baseline, one kernel per elementary operation with the
// intermediates in device memory allocated inside the step (as PyTorch eager runs
// x.sub(x.amax(-1, keepdim)).exp(), .sum(-1, keepdim), then the division):
//   forward:  m = rowmax(x) [fp32]; e = exp(x - m) [T]; s = rowsum(e) [fp32]; y = e / s
//   backward: g = rowsum(dy * y) [fp32]; dx = y * (dy - g)
// Row kernels take a warp per row and loop over its 16-byte vectors; elementwise kernels
// stride over the tensor's vectors.
#include "cuda/common.cuh"
#include "cuda/softmax_arms.hpp"

namespace prereg::cuda {
namespace {

constexpr const char *arm_name = "softmax.unfused";
/// Largest cols: row kernels loop, so only the int column index bounds it; kept at 64 Ki.
constexpr std::int64_t max_cols = 65536;
constexpr int rows_per_block = block_threads / 32; // one warp per row in the row kernels

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// m[row] = max of x[row, :].
template <class T>
__global__ void __launch_bounds__(block_threads)
    rowmax_kernel(const T *__restrict__ x, std::int64_t rows, int cols, float *__restrict__ m) {
  constexpr int V = vec_elems<T>;
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= rows)
    return;
  const T *xr = x + row * cols;
  float mx = -INFINITY;
#pragma unroll 4
  for (int c = lane * V; c < cols; c += 32 * V) {
    float v[V];
    load_vec(xr + c, v);
#pragma unroll
    for (int k = 0; k < V; ++k)
      mx = fmaxf(mx, v[k]);
  }
  mx = warp_max(mx);
  if (lane == 0)
    m[row] = mx;
}

/// s[row] = sum of a[row, :] (fp32), or of a[row, :] * b[row, :] if b is set.
template <class T>
__global__ void __launch_bounds__(block_threads)
    rowsum_kernel(const T *__restrict__ a, const T *__restrict__ b, std::int64_t rows, int cols,
                  float *__restrict__ s) {
  constexpr int V = vec_elems<T>;
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= rows)
    return;
  const T *ar = a + row * cols;
  const T *br = b != nullptr ? b + row * cols : nullptr;
  float sum = 0.f;
#pragma unroll 4
  for (int c = lane * V; c < cols; c += 32 * V) {
    float v[V];
    load_vec(ar + c, v);
    if (br != nullptr) {
      float w[V];
      load_vec(br + c, w);
#pragma unroll
      for (int k = 0; k < V; ++k)
        v[k] *= w[k];
    }
#pragma unroll
    for (int k = 0; k < V; ++k)
      sum += v[k];
  }
  sum = warp_sum(sum);
  if (lane == 0)
    s[row] = sum;
}

/// The elementwise kernels' operations on one element, given its row's scalar r.
enum class elementwise { sub_exp, div, softmax_dx };

/// out = op(a, b, r[row]) over 16-byte vectors: sub_exp: exp(a - r); div: a / r;
/// softmax_dx: a * (b - r) (a = y, b = dy).
template <elementwise Op, class T>
__global__ void __launch_bounds__(block_threads)
    elementwise_kernel(const T *__restrict__ a, const T *__restrict__ b,
                       const float *__restrict__ r, std::int64_t rows, int cols,
                       T *__restrict__ out) {
  constexpr int V = vec_elems<T>;
  const int per_row = cols / V;
  const std::int64_t total = rows * per_row;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / per_row;
    const std::int64_t o = row * cols + static_cast<std::int64_t>(i % per_row) * V;
    const float rv = r[row];
    float v[V];
    load_vec(a + o, v);
    if constexpr (Op == elementwise::sub_exp) {
#pragma unroll
      for (int k = 0; k < V; ++k)
        v[k] = expf(v[k] - rv);
    } else if constexpr (Op == elementwise::div) {
#pragma unroll
      for (int k = 0; k < V; ++k)
        v[k] = v[k] / rv;
    } else {
      float w[V];
      load_vec(b + o, w);
#pragma unroll
      for (int k = 0; k < V; ++k)
        v[k] = v[k] * (w[k] - rv);
    }
    store_vec(out + o, v);
  }
}

/// Launches elementwise_kernel<Op, T> over rows x cols.
template <elementwise Op, class T>
void launch_elementwise(const T *a, const T *b, const float *r, std::int64_t rows, int cols, T *out,
                        cudaStream_t s) {
  const std::int64_t vectors = rows * (cols / vec_elems<T>);
  const unsigned grid = static_cast<unsigned>(
      std::min<std::int64_t>(grid_for(vectors, block_threads), 64LL * sm_count()));
  PREREG_CUDA_LAUNCH(elementwise_kernel<Op, T>
                     <<<grid, block_threads, 0, s>>>(a, b, r, rows, cols, out));
}

/// The grid of the row kernels for `rows`; throws if it exceeds the x dimension's limit.
unsigned row_grid(std::int64_t rows) {
  const std::int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  if (blocks > 0x7fffffffLL)
    throw invalid_input(std::string(arm_name) + ": too many rows for one grid");
  return static_cast<unsigned>(blocks);
}

void forward(const tensor_args &t, step_allocator &alloc, void *stream) {
  require_softmax(t, false, max_cols, arm_name);
  dispatch_dtype(t.type, [&]<class T>() {
    const cudaStream_t s = as_stream(stream);
    const int cols = static_cast<int>(t.cols);
    const auto rows = static_cast<std::size_t>(t.rows);
    const auto *x = t.get<const T>(softmax::x);
    auto *m = static_cast<float *>(alloc.allocate(rows * sizeof(float)));
    PREREG_CUDA_LAUNCH(rowmax_kernel<T>
                       <<<row_grid(t.rows), block_threads, 0, s>>>(x, t.rows, cols, m));
    auto *e = static_cast<T *>(alloc.allocate(rows * static_cast<std::size_t>(cols) * sizeof(T)));
    launch_elementwise<elementwise::sub_exp, T>(x, nullptr, m, t.rows, cols, e, s);
    alloc.release(m);
    auto *sum = static_cast<float *>(alloc.allocate(rows * sizeof(float)));
    PREREG_CUDA_LAUNCH(rowsum_kernel<T>
                       <<<row_grid(t.rows), block_threads, 0, s>>>(e, nullptr, t.rows, cols, sum));
    launch_elementwise<elementwise::div, T>(e, nullptr, sum, t.rows, cols, t.get<T>(softmax::y), s);
    alloc.release(sum);
    alloc.release(e);
  });
}

void backward(const tensor_args &t, step_allocator &alloc, void *stream) {
  require_softmax(t, true, max_cols, arm_name);
  dispatch_dtype(t.type, [&]<class T>() {
    const cudaStream_t s = as_stream(stream);
    const int cols = static_cast<int>(t.cols);
    const auto *y = t.get<const T>(softmax::y);
    const auto *dy = t.get<const T>(softmax::dy);
    auto *g =
        static_cast<float *>(alloc.allocate(static_cast<std::size_t>(t.rows) * sizeof(float)));
    PREREG_CUDA_LAUNCH(rowsum_kernel<T>
                       <<<row_grid(t.rows), block_threads, 0, s>>>(dy, y, t.rows, cols, g));
    launch_elementwise<elementwise::softmax_dx, T>(y, dy, g, t.rows, cols, t.get<T>(softmax::dx),
                                                   s);
    alloc.release(g);
  });
}

} // namespace

const arm_entry softmax_unfused_entry{forward, backward};

} // namespace prereg::cuda
