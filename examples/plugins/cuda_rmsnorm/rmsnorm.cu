// An out-of-tree prereg arm in CUDA: RMSNorm forward (y = x * rstd * gamma, rstd saved), fp32,
// fp16 and bf16, one 256-thread block per row with fp32 accumulation. Built with nvcc against
// prereg's arm ABI header only (runner/include/prereg/arm_abi.h; docs/plugins.md):
//   make                      # builds libcuda_rmsnorm.so (PREREG_INCLUDE=..., NVCC=...)
//   prereg arms --plugin ./libcuda_rmsnorm.so
#include <prereg/arm_abi.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <new>

namespace {

template <class T> __device__ float load(const T *p, long i) { return static_cast<float>(p[i]); }
template <> __device__ float load(const __half *p, long i) { return __half2float(p[i]); }
template <> __device__ float load(const __nv_bfloat16 *p, long i) { return __bfloat162float(p[i]); }
template <class T> __device__ T store(float v) { return static_cast<T>(v); }
template <> __device__ __half store(float v) { return __float2half_rn(v); }
template <> __device__ __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }

constexpr int threads = 256;

template <class T>
__global__ void rmsnorm_fwd(const T *x, const T *gamma, T *y, float *rstd, long cols, float eps) {
  const long row = blockIdx.x;
  const T *xr = x + row * cols;
  float sq = 0.f;
  for (long c = threadIdx.x; c < cols; c += threads) {
    const float v = load(xr, c);
    sq += v * v;
  }
  __shared__ float part[threads / 32];
  for (int o = 16; o > 0; o /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = sq;
  __syncthreads();
  if (threadIdx.x < 32) {
    float s = threadIdx.x < threads / 32 ? part[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) part[0] = rsqrtf(s / static_cast<float>(cols) + eps);
  }
  __syncthreads();
  const float rs = part[0];
  if (threadIdx.x == 0 && rstd != nullptr) rstd[row] = rs;
  for (long c = threadIdx.x; c < cols; c += threads)
    y[row * cols + c] = store<T>(load(xr, c) * rs * load(gamma, c));
}

struct state {
  const void *x = nullptr, *gamma = nullptr;
  void *y = nullptr;
  float *rstd = nullptr;
  long rows = 0, cols = 0;
  float eps = 0;
  int type = 0; // 0 fp32, 1 fp16, 2 bf16
};

void *find(const prereg_cell *cell, const char *name) {
  for (size_t i = 0; i < cell->tensor_count; ++i)
    if (std::strcmp(cell->tensor_names[i], name) == 0) return cell->tensors[i].data;
  return nullptr;
}

int setup(const prereg_cell *cell, void **out, char *error, size_t size) {
  auto *s = new (std::nothrow) state;
  if (s == nullptr) {
    std::snprintf(error, size, "out of host memory");
    return 1;
  }
  s->x = find(cell, "x");
  s->gamma = find(cell, "gamma");
  s->y = find(cell, "y");
  s->rstd = static_cast<float *>(find(cell, "rstd"));
  s->rows = cell->rows;
  s->cols = cell->cols;
  s->eps = static_cast<float>(cell->eps);
  s->type = std::strcmp(cell->dtype, "fp16") == 0 ? 1 : std::strcmp(cell->dtype, "bf16") == 0 ? 2 : 0;
  *out = s;
  return 0;
}

int step(void *opaque, void *stream, char *error, size_t size) {
  const state &s = *static_cast<const state *>(opaque);
  auto st = static_cast<cudaStream_t>(stream);
  const dim3 grid(static_cast<unsigned>(s.rows)), block(threads);
  switch (s.type) {
  case 0:
    rmsnorm_fwd<<<grid, block, 0, st>>>(static_cast<const float *>(s.x), static_cast<const float *>(s.gamma),
                                        static_cast<float *>(s.y), s.rstd, s.cols, s.eps);
    break;
  case 1:
    rmsnorm_fwd<<<grid, block, 0, st>>>(static_cast<const __half *>(s.x), static_cast<const __half *>(s.gamma),
                                        static_cast<__half *>(s.y), s.rstd, s.cols, s.eps);
    break;
  default:
    rmsnorm_fwd<<<grid, block, 0, st>>>(static_cast<const __nv_bfloat16 *>(s.x),
                                        static_cast<const __nv_bfloat16 *>(s.gamma),
                                        static_cast<__nv_bfloat16 *>(s.y), s.rstd, s.cols, s.eps);
  }
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    std::snprintf(error, size, "launch failed: %s", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

void teardown(void *opaque) { delete static_cast<state *>(opaque); }

const prereg_arm arms[] = {
    {"cuda_rmsnorm", "rmsnorm", "cuda", "fp32,fp16,bf16", "fwd",
     "RMSNorm forward in CUDA: one 256-thread block per row, fp32 accumulation", setup, step,
     teardown},
};
const prereg_arm_table table = {PREREG_ARM_ABI_VERSION, 1, arms};

} // namespace

extern "C" const prereg_arm_table *prereg_arms(void) { return &table; }
