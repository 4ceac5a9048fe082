// Shared by layernorm.fused and rmsnorm.fused: the forward's layout dispatch (the register path
// for many rows, one row per block over more threads for few rows), the wide path's grid and
// its block-wide merge of (count, mean, M2) statistics.
#pragma once

#include "cuda/common.cuh"
#include "cuda/norm_fused_plan.hpp"

namespace prereg::cuda {

/// Calls `f.template operator()<S, BT, Early>()` for the forward of `rows` x `cols`
/// (cols <= norm_plan::register_cols): S the row shape, BT the threads per block, Early true
/// on the small-row layout (the kernel then loads gamma/beta with x, before the reductions, so
/// their DRAM latency overlaps; on the large-row path they are loaded after the reductions as
/// before, which keeps its register use and occupancy unchanged).
template <class T, class F> void dispatch_forward(std::int64_t rows, std::int64_t cols, F &&f) {
  const norm_plan::row_layout l = norm_plan::forward_layout(rows, cols, vec_elems<T>, sm_count());
  if (!l.spread) {
    dispatch_row<T>(cols, [&]<class S>() { f.template operator()<S, block_threads, false>(); });
    return;
  }
  // forward_layout gives 2 vectors per thread except for rows of at most 32 vectors (1).
  const auto two = [&]<int TPR>() {
    if (l.vpt != 2)
      throw std::logic_error("forward dispatch: a spread layout of more than 32 threads has 2 "
                             "vectors per thread");
    f.template operator()<row_shape<T, TPR, 2>, TPR, true>();
  };
  switch (l.tpr) {
  case 32:
    if (l.vpt == 1)
      f.template operator()<row_shape<T, 32, 1>, 32, true>();
    else
      two.template operator()<32>();
    break;
  case 64:
    two.template operator()<64>();
    break;
  case 128:
    two.template operator()<128>();
    break;
  case 256:
    two.template operator()<256>();
    break;
  case 512:
    two.template operator()<512>();
    break;
  default:
    two.template operator()<1024>();
    break;
  }
}

/// Loads one 16-byte vector at `p` as bits, default caching (data read again soon); 16-bit
/// elements stay packed two per register until unpack_raw converts them where they are used.
template <class T> __device__ __forceinline__ uint4 load_raw(const T *p) {
  return *reinterpret_cast<const uint4 *>(p);
}

/// Calls `f.template operator()<S, BT>()` for LayerNorm's backward of `cols` (<=
/// norm_plan::register_cols) with the layout norm_plan::ln_backward_layout picks: S the row
/// shape, BT the threads per block.
template <class T, class F> void dispatch_ln_backward(std::int64_t cols, F &&f) {
  const norm_plan::row_layout l = norm_plan::ln_backward_layout(cols, vec_elems<T>);
  const norm_plan::row_layout reg = norm_plan::register_layout(cols, vec_elems<T>);
  if constexpr (sizeof(T) == 4) {
    if (l.tpr != reg.tpr)
      throw std::logic_error("backward dispatch: only 16-bit rows are widened");
    dispatch_row<T>(cols, [&]<class S>() { f.template operator()<S, block_threads>(); });
  } else {
    // 16-bit: the register layouts of 32 and 64 threads, else a widened one (dispatch_row
    // would also instantiate the 128- and 256-thread shapes of 4 vectors that spill).
    const auto reg_shape = [&]<class S>() { f.template operator()<S, block_threads>(); };
    constexpr int wide_vpt = max_elems_per_thread / vec_elems<T> / 2 + 1;
    if (reg.tpr == 32 && l.tpr == 32) {
      detail::dispatch_vpt<T, 32, 1>(reg.vpt, reg_shape);
      return;
    }
    if (reg.tpr == 64 && l.tpr == 64) {
      detail::dispatch_vpt<T, 64, wide_vpt>(reg.vpt, reg_shape);
      return;
    }
    if (l.tpr != 512)
      throw std::logic_error("backward dispatch: a widened layout has 512 threads per row");
    if (l.vpt == 1)
      f.template operator()<row_shape<T, 512, 1>, 512>();
    else
      f.template operator()<row_shape<T, 512, 2>, 512>();
  }
}

/// Blocks of `Kernel` (`Threads` threads each) resident per SM, at least 1 (queried once per
/// kernel, outside any capture: the correctness check calls every arm first).
template <auto Kernel, int Threads> [[nodiscard]] int blocks_per_sm() {
  static const int n = [] {
    int per_sm = 0;
    PREREG_CUDA_CALL(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, Threads, 0));
    return per_sm < 1 ? 1 : per_sm;
  }();
  return n;
}

/// L2 bytes of the current device (queried once per process).
[[nodiscard]] inline std::int64_t l2_bytes() {
  static const std::int64_t n = [] {
    int dev = 0, v = 0;
    PREREG_CUDA_CALL(cudaGetDevice(&dev));
    PREREG_CUDA_CALL(cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, dev));
    return static_cast<std::int64_t>(v);
  }();
  return n;
}

/// Merges the statistics (count nb, mean mb, sum of squared deviations m2b) of a second set
/// into (n, m, m2) (Chan et al.'s pairwise update: exact for n = 0, no E[x^2] - E[x]^2).
__device__ __forceinline__ void chan_merge(float &n, float &m, float &m2, float nb, float mb,
                                           float m2b) {
  if (nb == 0.f)
    return;
  const float nt = n + nb;
  const float delta = mb - m;
  const float wb = nb / nt;
  m += delta * wb;
  m2 += m2b + delta * delta * n * wb;
  n = nt;
}

/// Merges every thread's (n, m, m2) over the block in a fixed order (a shuffle-down tree per
/// warp, then the warps in order by thread 0) and gives every thread the block's mean and M2.
/// `smem` holds 3 * 32 + 2 floats. Every thread of the block must call it.
__device__ __forceinline__ void block_merge(float &n, float &m, float &m2, float *smem) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float on = __shfl_down_sync(0xffffffffu, n, o);
    const float om = __shfl_down_sync(0xffffffffu, m, o);
    const float om2 = __shfl_down_sync(0xffffffffu, m2, o);
    if (lane + o < 32)
      chan_merge(n, m, m2, on, om, om2);
  }
  if (lane == 0) {
    smem[warp] = n;
    smem[32 + warp] = m;
    smem[64 + warp] = m2;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float an = smem[0], am = smem[32], am2 = smem[64];
    for (int w = 1; w < warps; ++w)
      chan_merge(an, am, am2, smem[w], smem[32 + w], smem[64 + w]);
    smem[96] = am;
    smem[97] = am2;
  }
  __syncthreads();
  m = smem[96];
  m2 = smem[97];
  __syncthreads(); // the next call's writes must not overtake these reads
}

} // namespace prereg::cuda
