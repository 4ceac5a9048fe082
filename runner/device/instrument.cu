// The instrument's device kernels: read sweep (L2 flush, read ceiling), write fill (write ceiling),
// empty step, clock probe, input fill.
#include "cuda/common.cuh"
#include "device/instrument.hpp"

namespace prereg::cuda {
namespace {

__global__ void __launch_bounds__(256)
    read_sweep_kernel(const uint4 *__restrict__ p, std::size_t n, unsigned long long *sink) {
  constexpr unsigned fill = 0x01010101u * static_cast<unsigned>(flush_fill_byte);
  unsigned acc = 0xffffffffu;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
    acc &= a.x & a.y & a.z & a.w & b.x & b.y & b.z & b.w & c.x & c.y & c.z & c.w & d.x & d.y & d.z &
           d.w;
  }
  for (; i < n; i += stride) {
    const uint4 a = p[i];
    acc &= a.x & a.y & a.z & a.w;
  }
  if (acc != fill)
    *sink = acc; // never true: the buffer holds only the fill byte
}

// The write ceiling: 16-byte stores of the fill pattern, four per thread and iteration, no load.
__global__ void __launch_bounds__(256) write_fill_kernel(uint4 *__restrict__ p, std::size_t n) {
  constexpr unsigned fill = 0x01010101u * static_cast<unsigned>(flush_fill_byte);
  const uint4 v = make_uint4(fill, fill, fill, fill);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    p[i] = v;
    p[i + stride] = v;
    p[i + 2 * stride] = v;
    p[i + 3 * stride] = v;
  }
  for (; i < n; i += stride)
    p[i] = v;
}

__global__ void empty_kernel() {}

// The kernel clock's window marks: queued just before a timed window's start event and just
// after its stop event, so that the device's activity records bound the window (cupti.cpp).
__global__ void prereg_window_open() {}
__global__ void prereg_window_close() {}
// A Python arm's `with t.region(label)` (docs/python-arms.md, "Regions"), with the clock on.
__global__ void prereg_region_open() {}
__global__ void prereg_region_close() {}

__global__ void clock_probe_kernel(unsigned long long interval_ns, unsigned long long *out) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  } while (t1 - t0 < interval_ns);
  const long long c1 = clock64();
  out[0] = static_cast<unsigned long long>(c1 - c0);
  out[1] = t1 - t0;
}

__device__ __forceinline__ float hash_uniform(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * 0x1.0p-24f;
}

template <class T>
__global__ void fill_kernel(T *p, std::size_t n, float lo, float hi, std::uint64_t seed,
                            std::int64_t cols, float row_offset) {
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float v = lo + (hi - lo) * hash_uniform(seed, i);
    if (cols > 0) {
      const auto row = static_cast<std::uint64_t>(i / static_cast<std::size_t>(cols));
      v += row_offset * (2.f * hash_uniform(seed ^ 0x5bd1e995ULL, row) - 1.f);
    }
    p[i] = from_float<T>(v);
  }
}

template <class W> __global__ void fill_pattern_kernel(W *p, std::size_t n, W bits) {
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = bits;
}

} // namespace

void launch_read_sweep(const void *buffer, std::size_t bytes, unsigned long long *sink, int sms,
                       cudaStream_t stream) {
  PREREG_CUDA_LAUNCH(read_sweep_kernel<<<static_cast<unsigned>(sms * 4), 256, 0, stream>>>(
      static_cast<const uint4 *>(buffer), bytes / 16, sink));
}

void launch_write_fill(void *buffer, std::size_t bytes, int sms, cudaStream_t stream) {
  PREREG_CUDA_LAUNCH(write_fill_kernel<<<static_cast<unsigned>(sms * 4), 256, 0, stream>>>(
      static_cast<uint4 *>(buffer), bytes / 16));
}

void launch_empty(cudaStream_t stream) { PREREG_CUDA_LAUNCH(empty_kernel<<<1, 1, 0, stream>>>()); }

void launch_window_mark(bool open, cudaStream_t stream) {
  if (open)
    PREREG_CUDA_LAUNCH(prereg_window_open<<<1, 1, 0, stream>>>());
  else
    PREREG_CUDA_LAUNCH(prereg_window_close<<<1, 1, 0, stream>>>());
}

void launch_region_mark(bool open, cudaStream_t stream) {
  if (open)
    PREREG_CUDA_LAUNCH(prereg_region_open<<<1, 1, 0, stream>>>());
  else
    PREREG_CUDA_LAUNCH(prereg_region_close<<<1, 1, 0, stream>>>());
}

loaded_code loaded_code_of_kernels() {
  cudaFuncAttributes a{};
  PREREG_CUDA_CALL(cudaFuncGetAttributes(&a, empty_kernel));
  return {a.binaryVersion, a.ptxVersion};
}

void launch_clock_probe(unsigned long long *out, std::uint64_t interval_ns, cudaStream_t stream) {
  PREREG_CUDA_LAUNCH(clock_probe_kernel<<<1, 1, 0, stream>>>(interval_ns, out));
}

void launch_fill_uniform(void *p, std::size_t n, dtype type, float lo, float hi, std::uint64_t seed,
                         std::int64_t cols, float row_offset, cudaStream_t stream) {
  if (n == 0)
    return;
  const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 65536));
  dispatch_dtype(type, [&]<class T>() {
    PREREG_CUDA_LAUNCH(fill_kernel<T><<<grid, 256, 0, stream>>>(static_cast<T *>(p), n, lo, hi,
                                                                seed, cols, row_offset));
  });
}

void launch_fill_pattern(void *p, std::size_t n, std::size_t width, std::uint64_t bits,
                         cudaStream_t stream) {
  if (n == 0)
    return;
  const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 65536));
  if (width == 8)
    PREREG_CUDA_LAUNCH(fill_pattern_kernel<unsigned long long>
                       <<<grid, 256, 0, stream>>>(static_cast<unsigned long long *>(p), n, bits));
  else if (width == 1)
    PREREG_CUDA_LAUNCH(fill_pattern_kernel<unsigned char><<<grid, 256, 0, stream>>>(
        static_cast<unsigned char *>(p), n, static_cast<unsigned char>(bits)));
  else if (width == 4)
    PREREG_CUDA_LAUNCH(fill_pattern_kernel<unsigned><<<grid, 256, 0, stream>>>(
        static_cast<unsigned *>(p), n, static_cast<unsigned>(bits)));
  else
    PREREG_CUDA_LAUNCH(fill_pattern_kernel<unsigned short><<<grid, 256, 0, stream>>>(
        static_cast<unsigned short *>(p), n, static_cast<unsigned short>(bits)));
}

} // namespace prereg::cuda
