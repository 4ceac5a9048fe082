// rmsnorm.unfused: the Hugging Face composite run eagerly, one kernel per elementary op with
// every intermediate in device memory allocated inside the step (a no-op cast for fp32 is
// skipped, as PyTorch skips it):
//   forward:  x32 = x.float(); sq = x32^2; var = sq.mean(-1); ve = var + eps; rstd = rsqrt(ve);
//             h = x32 * rstd; hc = h.to(T); y = w * hc
//   backward: the autograd graph of the same ops, with two departures: h is recomputed from x
//             and rstd (the forward saves only rstd), and dweight is the column sum of the fp32
//             product dy * h rather than of dy * hc rounded to T (eager's rounding of every
//             product to fp16 alone exceeds the fp16 tolerance once rows reach the thousands).
#include "cuda/arm_entries.hpp"
#include "cuda/common.cuh"

namespace prereg::cuda {
namespace {

/// Loads 8 consecutive elements (16-byte aligned for T, 32-byte for float) as floats.
template <class T> __device__ __forceinline__ void load8(const T *p, float *v) {
  if constexpr (sizeof(T) == 4) {
    load_vec(p, v);
    load_vec(p + 4, v + 4);
  } else {
    load_vec(p, v);
  }
}
template <class T> __device__ __forceinline__ void store8(T *p, const float *v) {
  if constexpr (sizeof(T) == 4) {
    store_vec(p, v);
    store_vec(p + 4, v + 4);
  } else {
    store_vec(p, v);
  }
}

enum class operand { none, full, row, col };

/// out = op(a, b) elementwise over [rows, cols] (cols % 8 == 0), 8 elements per thread and
/// step; b is a full tensor, a per-row fp32 scalar, a per-column vector of B, or absent.
template <class A, class B, class O, operand BK, class Op>
__global__ void __launch_bounds__(block_threads)
    elementwise_kernel(const A *__restrict__ a, const B *__restrict__ b, O *__restrict__ out,
                       std::int64_t rows, int cols, Op op) {
  const std::int64_t groups = rows * (cols / 8);
  for (std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       g < groups; g += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t e = g * 8;
    float av[8], bv[8], ov[8];
    load8(a + e, av);
    if constexpr (BK == operand::full) {
      load8(b + e, bv);
    } else if constexpr (BK == operand::col) {
      load8(b + e % cols, bv);
    } else if constexpr (BK == operand::row) {
      const float s = static_cast<float>(b[e / cols]);
#pragma unroll
      for (int k = 0; k < 8; ++k)
        bv[k] = s;
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k)
        bv[k] = 0.f;
    }
#pragma unroll
    for (int k = 0; k < 8; ++k)
      ov[k] = op(av[k], bv[k]);
    store8(out + e, ov);
  }
}

struct op_first {
  __device__ float operator()(float a, float) const { return a; }
};
struct op_square {
  __device__ float operator()(float a, float) const { return a * a; }
};
struct op_mul {
  __device__ float operator()(float a, float b) const { return a * b; }
};

/// out[row] = op(a[row], b[row]) over rows (b may be null).
template <class Op>
__global__ void __launch_bounds__(block_threads)
    rows_kernel(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ out,
                std::int64_t rows, Op op) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < rows)
    out[i] = op(a[i], b != nullptr ? b[i] : 0.f);
}

struct op_add_eps {
  float eps;
  __device__ float operator()(float a, float) const { return a + eps; }
};
struct op_rsqrt {
  __device__ float operator()(float a, float) const { return rsqrtf(a); }
};
/// d rsqrt(v): grad * (-1/2) * rsqrt(v)^3, with b = rsqrt(v) saved.
struct op_rsqrt_grad {
  __device__ float operator()(float grad, float r) const { return grad * -0.5f * r * r * r; }
};

/// out[row] = scale * sum over the row of a [rows, cols] fp32 tensor (a warp per row).
__global__ void __launch_bounds__(block_threads)
    row_sum_kernel(const float *__restrict__ in, std::int64_t rows, int cols, float scale,
                   float *__restrict__ out) {
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * (block_threads / 32) + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= rows)
    return;
  float s = 0.f;
#pragma unroll 4
  for (int c = lane * 4; c < cols; c += 128) {
    float v[4];
    load_vec(in + row * cols + c, v);
    s += (v[0] + v[1]) + (v[2] + v[3]);
  }
  s = warp_sum(s);
  if (lane == 0)
    out[row] = s * scale;
}

/// dx32 += x32 * (2 * dvar[row] / cols): the pow and mean backward, in place.
__global__ void __launch_bounds__(block_threads)
    pow_mean_grad_kernel(float *__restrict__ dx32, const float *__restrict__ x32,
                         const float *__restrict__ dvar, std::int64_t rows, int cols) {
  const std::int64_t groups = rows * (cols / 4);
  const float two_over_n = 2.f / static_cast<float>(cols);
  for (std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       g < groups; g += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t e = g * 4;
    const float s = dvar[e / cols] * two_over_n;
    float d[4], v[4];
    load_vec(dx32 + e, d);
    load_vec(x32 + e, v);
#pragma unroll
    for (int k = 0; k < 4; ++k)
      d[k] += v[k] * s;
    store_vec(dx32 + e, d);
  }
}

/// The eager runner: one launch per op, allocations through the arm's step_allocator.
template <class T> class eager {
public:
  eager(const norm_tensors &t, step_allocator &alloc, cudaStream_t s)
      : m_t(t), m_alloc(alloc), m_s(s), m_rows(t.rows), m_cols(static_cast<int>(t.cols)),
        m_n(static_cast<std::size_t>(t.rows) * static_cast<std::size_t>(t.cols)) {}

  template <class E> E *full() { return static_cast<E *>(m_alloc.allocate(m_n * sizeof(E))); }
  float *per_row() {
    return static_cast<float *>(m_alloc.allocate(static_cast<std::size_t>(m_rows) * 4));
  }
  void release(const void *p) { m_alloc.release(const_cast<void *>(p)); }

  template <operand BK, class A, class B, class O, class Op>
  void map(const A *a, const B *b, O *out, Op op) {
    const std::int64_t groups = m_rows * (m_cols / 8);
    const unsigned grid = static_cast<unsigned>(
        std::min<std::int64_t>(grid_for(groups, block_threads), 64LL * sm_count()));
    PREREG_CUDA_LAUNCH(elementwise_kernel<A, B, O, BK, Op>
                       <<<grid, block_threads, 0, m_s>>>(a, b, out, m_rows, m_cols, op));
  }
  template <class Op> void rows(const float *a, const float *b, float *out, Op op) {
    PREREG_CUDA_LAUNCH(rows_kernel<Op><<<grid_for(m_rows, block_threads), block_threads, 0, m_s>>>(
        a, b, out, m_rows, op));
  }
  void row_sum(const float *in, float scale, float *out) {
    PREREG_CUDA_LAUNCH(
        row_sum_kernel<<<grid_for(m_rows, block_threads / 32), block_threads, 0, m_s>>>(
            in, m_rows, m_cols, scale, out));
  }
  /// x.float(): x itself for fp32 (PyTorch's no-op cast), else a new fp32 tensor.
  const float *to_f32(const T *x) {
    if constexpr (sizeof(T) == 4) {
      return x;
    } else {
      float *out = full<float>();
      map<operand::none>(x, static_cast<const float *>(nullptr), out, op_first{});
      return out;
    }
  }
  /// Releases what to_f32 allocated from an input (nothing for the fp32 no-op).
  template <class E> void release_cast(const E *cast, const void *source) {
    if (static_cast<const void *>(cast) != source)
      release(cast);
  }
  /// h.to(T): h itself for fp32, else a new T tensor.
  const T *to_t(const float *h) {
    if constexpr (sizeof(T) == 4) {
      return h;
    } else {
      T *out = full<T>();
      map<operand::none>(h, static_cast<const float *>(nullptr), out, op_first{});
      return out;
    }
  }

  const norm_tensors &m_t;
  step_allocator &m_alloc;
  cudaStream_t m_s;
  std::int64_t m_rows;
  int m_cols;
  std::size_t m_n;
};

void forward(const norm_tensors &t, step_allocator &alloc, void *stream) {
  dispatch_dtype(t.type, [&]<class T>() {
    eager<T> e(t, alloc, as_stream(stream));
    const auto *x = static_cast<const T *>(t.x);
    const float *x32 = e.to_f32(x);
    float *sq = e.template full<float>();
    e.template map<operand::none>(x32, static_cast<const float *>(nullptr), sq, op_square{});
    float *var = e.per_row();
    e.row_sum(sq, 1.f / static_cast<float>(t.cols), var);
    e.release(sq);
    float *ve = e.per_row();
    e.rows(var, nullptr, ve, op_add_eps{static_cast<float>(norm_eps(operation::rmsnorm))});
    e.release(var);
    e.rows(ve, nullptr, t.rstd, op_rsqrt{});
    e.release(ve);
    float *h = e.template full<float>();
    e.template map<operand::row>(x32, static_cast<const float *>(t.rstd), h, op_mul{});
    e.release_cast(x32, x);
    const T *hc = e.to_t(h);
    if (static_cast<const void *>(hc) != h)
      e.release(h);
    e.template map<operand::col>(hc, static_cast<const T *>(t.gamma), static_cast<T *>(t.y),
                                 op_mul{});
    e.release(hc);
  });
}

void backward(const norm_tensors &t, step_allocator &alloc, void *stream) {
  dispatch_dtype(t.type, [&]<class T>() {
    eager<T> e(t, alloc, as_stream(stream));
    const auto *x = static_cast<const T *>(t.x);
    const auto *dy = static_cast<const T *>(t.dy);
    const auto *w = static_cast<const T *>(t.gamma);
    // y = w * hc: d hc = dy * w; d w = sum_rows(dy * h) (fp32 product, see above).
    T *dhc = e.template full<T>();
    e.template map<operand::col>(dy, w, dhc, op_mul{});
    const float *x32 = e.to_f32(x);
    float *h = e.template full<float>();
    e.template map<operand::row>(x32, static_cast<const float *>(t.rstd), h, op_mul{});
    float *prod = e.template full<float>();
    e.template map<operand::full>(dy, static_cast<const float *>(h), prod, op_mul{});
    e.release(h);
    const int chunk = column_chunk(t.rows);
    const int chunks = static_cast<int>((t.rows + chunk - 1) / chunk);
    auto *part = static_cast<float *>(
        alloc.allocate(static_cast<std::size_t>(chunks) * static_cast<std::size_t>(t.cols) * 4));
    const dim3 grid(static_cast<unsigned>(chunks), grid_for(t.cols / 4, block_threads));
    PREREG_CUDA_LAUNCH(column_partials_kernel<float><<<grid, block_threads, 0, as_stream(stream)>>>(
        prod, t.rows, static_cast<int>(t.cols), chunk, part));
    e.release(prod);
    reduce_partials<T>(part, nullptr, chunks, static_cast<int>(t.cols), static_cast<T *>(t.dgamma),
                       nullptr, as_stream(stream));
    e.release(part);
    // hc = h.to(T): dh = dhc.float().
    const float *dh = e.to_f32(dhc);
    if (static_cast<const void *>(dh) != dhc)
      e.release(dhc);
    // h = x32 * rstd: d rstd = sum(dh * x32, -1); d x32 = dh * rstd.
    float *t1 = e.template full<float>();
    e.template map<operand::full>(dh, x32, t1, op_mul{});
    float *drs = e.per_row();
    e.row_sum(t1, 1.f, drs);
    e.release(t1);
    // rstd = rsqrt(ve), ve = var + eps: d var = d rstd * (-1/2) rstd^3.
    float *dvar = e.per_row();
    e.rows(drs, t.rstd, dvar, op_rsqrt_grad{});
    e.release(drs);
    float *dx32 = sizeof(T) == 4 ? static_cast<float *>(t.dx) : e.template full<float>();
    e.template map<operand::row>(dh, static_cast<const float *>(t.rstd), dx32, op_mul{});
    e.release(dh);
    // var = mean(x32^2, -1): d x32 += 2 x32 * d var / cols.
    PREREG_CUDA_LAUNCH(pow_mean_grad_kernel<<<static_cast<unsigned>(std::min<std::int64_t>(
                                                  grid_for(t.rows * (t.cols / 4), block_threads),
                                                  64LL * sm_count())),
                                              block_threads, 0, as_stream(stream)>>>(
        dx32, x32, dvar, t.rows, static_cast<int>(t.cols)));
    e.release(dvar);
    e.release_cast(x32, x);
    if constexpr (sizeof(T) != 4) {
      e.template map<operand::none>(static_cast<const float *>(dx32),
                                    static_cast<const float *>(nullptr), static_cast<T *>(t.dx),
                                    op_first{});
      e.release(dx32);
    }
  });
}

} // namespace

const arm_ops rmsnorm_unfused_ops{forward, backward};

} // namespace prereg::cuda
