// How the fused LayerNorm and RMSNorm arms lay rows over threads and blocks: pure host functions
// with no CUDA header, so the CPU tests check the rules (tests/norm_fused_plan_test.cpp).
#pragma once

#include <algorithm>
#include <cstdint>

namespace prereg::cuda::norm_plan {

/// Widest row the register path holds: 256 threads of 32 elements (common.cuh's row shapes).
inline constexpr std::int64_t register_cols = 8192;
/// Widest row of the fused arms (the wide path above register_cols).
inline constexpr std::int64_t max_cols = 65536;
/// Threads per block of the wide path: one row per block at a time.
inline constexpr int wide_threads = 512;
/// 16-byte vectors each thread of the wide path loads per step of a sweep, all issued before
/// the first is used (512 threads x 4 x 16 B = 32 KiB in flight per block).
inline constexpr int wide_chunk = 4;
/// Most wide-path blocks per SM: bounds the [P, N] partials of the backward (P <= 4 SMs, so
/// 8 P N bytes stay under the descriptors' 64 sms cols scratch bound).
inline constexpr int wide_max_blocks_per_sm = 4;

/// Threads per row, 16-byte vectors per thread and threads per block of one forward launch;
/// `spread` marks the small-row layout (one row per block, the row over more threads).
struct row_layout {
  int tpr = 32;
  int vpt = 1;
  int block = 256;
  bool spread = false;
};

/// The register path's layout for large row counts: the fewest of 32, 64, 128, 256 threads
/// that hold the row with at most 32 elements each, 256-thread blocks (the rule of
/// common.cuh's threads_per_row / dispatch_row). `vec`: elements per 16-byte vector.
[[nodiscard]] constexpr row_layout register_layout(std::int64_t cols, int vec) {
  int tpr = 32;
  while (static_cast<std::int64_t>(tpr) * 32 < cols && tpr < 256)
    tpr *= 2;
  const std::int64_t per_row = static_cast<std::int64_t>(tpr) * vec;
  return {tpr, static_cast<int>((cols + per_row - 1) / per_row), 256, false};
}

/// The forward's layout (cols <= register_cols). When the register layout's grid covers every
/// SM it is kept (large row counts: unchanged). Otherwise the rows are too few to fill the GPU
/// that way (e.g. 128 x 1024 fp32: 8 rows per block, 16 blocks on 132 SMs), so each row gets
/// its own block of the fewest threads (32 to 1024) that hold it with at most 2 vectors each:
/// `rows` blocks, each thread's loads all in flight at once.
[[nodiscard]] constexpr row_layout forward_layout(std::int64_t rows, std::int64_t cols, int vec,
                                                  int sms) {
  const row_layout reg = register_layout(cols, vec);
  const int rows_per_block = reg.block / reg.tpr;
  if ((rows + rows_per_block - 1) / rows_per_block >= sms)
    return reg;
  const std::int64_t vectors = cols / vec;
  int tpr = 32;
  while (static_cast<std::int64_t>(tpr) * 2 < vectors && tpr < 1024)
    tpr *= 2;
  return {tpr, static_cast<int>((vectors + tpr - 1) / tpr), tpr, true};
}

/// LayerNorm's backward layout on the register path. The register layout, except for 16-bit
/// rows over 128 or more threads (cols > 2048, `vec` 8): there each thread held 4 vectors of
/// two rows (x and dy of rows_in_flight = 2) plus gamma and two fp32 partials of its 32
/// columns, over 255 registers (ptxas spilled 36-44 bytes). They take 512 threads per row in
/// 512-thread blocks instead (__launch_bounds__(512): at most 128 registers, which these
/// shapes fit without spilling): 2 vectors per thread above 4096 cols, 1 up to 4096 (the
/// kernel then keeps 4 rows in flight, ln_bwd_rows_in_flight), so each SM keeps 64 KiB of x
/// and dy in flight, as before.
[[nodiscard]] constexpr row_layout ln_backward_layout(std::int64_t cols, int vec) {
  const row_layout reg = register_layout(cols, vec);
  if (vec != 8 || reg.tpr < 128)
    return reg;
  const std::int64_t vectors = cols / vec;
  return {512, vectors <= 512 ? 1 : 2, 512, false};
}

/// Blocks of a wide-path kernel (cols > register_cols): one per row up to `per_sm_resident`
/// per SM (occupancy), fewer when the rows they work on at once would not stay in L2: each
/// block re-reads its row (`bytes_per_row`: what the second sweep re-reads, plus the backward's
/// partial row) in a second sweep, so resident blocks x bytes_per_row is kept within half of
/// L2; at least one per SM, at most wide_max_blocks_per_sm.
[[nodiscard]] constexpr int wide_grid(std::int64_t rows, std::int64_t bytes_per_row, int sms,
                                      int per_sm_resident, std::int64_t l2_bytes) {
  std::int64_t per_sm = (l2_bytes / 2) / (static_cast<std::int64_t>(sms) * bytes_per_row);
  per_sm = std::min<std::int64_t>(per_sm, std::min(per_sm_resident, wide_max_blocks_per_sm));
  per_sm = std::max<std::int64_t>(per_sm, 1);
  return static_cast<int>(std::min<std::int64_t>(rows, per_sm * sms));
}

} // namespace prereg::cuda::norm_plan
