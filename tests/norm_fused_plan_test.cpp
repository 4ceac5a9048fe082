// Tests of the fused LayerNorm/RMSNorm arms' layout rules (kernels/cuda/norm_fused_plan.hpp:
// host-only, so they run without a GPU): which rows keep the register layout, which are spread
// over more threads, the 16-bit backward's widened layouts and the wide path's grid.
#include "cuda/norm_fused_plan.hpp"

#include <doctest/doctest.h>

using namespace prereg::cuda::norm_plan;

namespace {
constexpr int h200_sms = 132;
constexpr std::int64_t h200_l2 = 60LL << 20;
constexpr int fp32_vec = 4, half_vec = 8;
} // namespace

TEST_CASE("norm_plan: the register layout is common.cuh's row shape") {
  const row_layout a = register_layout(1024, fp32_vec);
  CHECK((a.tpr == 32 && a.vpt == 8 && a.block == 256 && !a.spread));
  const row_layout b = register_layout(896, half_vec);
  CHECK((b.tpr == 32 && b.vpt == 4));
  const row_layout c = register_layout(8192, fp32_vec);
  CHECK((c.tpr == 256 && c.vpt == 8));
  const row_layout d = register_layout(1032, fp32_vec);
  CHECK((d.tpr == 64 && d.vpt == 5));
  const row_layout e = register_layout(8, fp32_vec);
  CHECK((e.tpr == 32 && e.vpt == 1));
}

TEST_CASE("norm_plan: many rows keep the register layout, few rows are spread") {
  SUBCASE("large row counts are unchanged") {
    for (const std::int64_t cols : {8, 896, 1024, 4096, 8192}) {
      CAPTURE(cols);
      for (const int vec : {fp32_vec, half_vec}) {
        const row_layout r = forward_layout(65536, cols, vec, h200_sms);
        const row_layout reg = register_layout(cols, vec);
        CHECK((r.tpr == reg.tpr && r.vpt == reg.vpt && r.block == 256 && !r.spread));
      }
    }
  }
  SUBCASE("the threshold: the register grid must cover every SM") {
    // fp32 1024: 8 rows per block; 132 blocks need 1056 rows.
    CHECK_FALSE(forward_layout(1056, 1024, fp32_vec, h200_sms).spread);
    CHECK(forward_layout(1048, 1024, fp32_vec, h200_sms).spread);
    // fp32 8192: one row per block already; 132 rows fill the SMs.
    CHECK_FALSE(forward_layout(132, 8192, fp32_vec, h200_sms).spread);
    CHECK(forward_layout(131, 8192, fp32_vec, h200_sms).spread);
  }
  SUBCASE("spread rows: one row per block, at most 2 vectors per thread") {
    const row_layout a = forward_layout(128, 1024, fp32_vec, h200_sms); // 256 vectors
    CHECK((a.spread && a.tpr == 128 && a.vpt == 2 && a.block == 128));
    const row_layout b = forward_layout(1, 896, half_vec, h200_sms); // 112 vectors
    CHECK((b.spread && b.tpr == 64 && b.vpt == 2 && b.block == 64));
    const row_layout c = forward_layout(7, 8192, fp32_vec, h200_sms); // 2048 vectors
    CHECK((c.spread && c.tpr == 1024 && c.vpt == 2 && c.block == 1024));
    const row_layout d = forward_layout(2, 8, fp32_vec, h200_sms); // 2 vectors
    CHECK((d.spread && d.tpr == 32 && d.vpt == 1 && d.block == 32));
    for (std::int64_t cols = 8; cols <= register_cols; cols += 8) {
      for (const int vec : {fp32_vec, half_vec}) {
        const row_layout r = forward_layout(1, cols, vec, h200_sms);
        const std::int64_t vectors = cols / vec;
        CAPTURE(cols);
        CAPTURE(vec);
        REQUIRE(r.spread);
        CHECK(r.block == r.tpr);
        CHECK(r.tpr <= 1024);
        CHECK(static_cast<std::int64_t>(r.tpr) * r.vpt >= vectors);
        // the dispatch instantiates vpt 1 only at 32 threads, else 2
        CHECK((r.vpt == 2 || (r.vpt == 1 && r.tpr == 32)));
      }
    }
  }
}

TEST_CASE("norm_plan: the 16-bit LayerNorm backward widens rows over 128 threads") {
  const row_layout a = ln_backward_layout(4096, half_vec); // 512 vectors
  CHECK((a.tpr == 512 && a.vpt == 1 && a.block == 512));
  const row_layout b = ln_backward_layout(8192, half_vec); // 1024 vectors
  CHECK((b.tpr == 512 && b.vpt == 2 && b.block == 512));
  const row_layout c = ln_backward_layout(2056, half_vec); // 257 vectors
  CHECK((c.tpr == 512 && c.vpt == 1 && c.block == 512));
  const row_layout c2 = ln_backward_layout(4104, half_vec); // 513 vectors
  CHECK((c2.tpr == 512 && c2.vpt == 2 && c2.block == 512));
  const row_layout d = ln_backward_layout(2048, half_vec); // 64 threads: unchanged
  CHECK((d.tpr == 64 && d.vpt == 4 && d.block == 256));
  const row_layout e = ln_backward_layout(8192, fp32_vec); // fp32: unchanged
  CHECK((e.tpr == 256 && e.vpt == 8 && e.block == 256));
  for (std::int64_t cols = 2056; cols <= register_cols; cols += 8) {
    const row_layout r = ln_backward_layout(cols, half_vec);
    CAPTURE(cols);
    CHECK(r.tpr == 512);
    CHECK(r.block == 512);
    CHECK((r.vpt == 1 || r.vpt == 2));
    CHECK(static_cast<std::int64_t>(r.tpr) * r.vpt * half_vec >= cols);
  }
}

TEST_CASE("norm_plan: the wide path's grid") {
  // fp32 65536 forward: 256 KiB re-read per row; half of L2 holds 120 rows: one block per SM.
  CHECK(wide_grid(4096, 65536 * 4, h200_sms, 4, h200_l2) == h200_sms);
  // fp16 16384 forward: 32 KiB per row: capped by residency (2) and then by the cap (4).
  CHECK(wide_grid(4096, 16384 * 2, h200_sms, 2, h200_l2) == 2 * h200_sms);
  CHECK(wide_grid(4096, 16384 * 2, h200_sms, 8, h200_l2) == wide_max_blocks_per_sm * h200_sms);
  // never more blocks than rows, never fewer than one per SM when the rows allow it
  CHECK(wide_grid(3, 65536 * 4, h200_sms, 4, h200_l2) == 3);
  CHECK(wide_grid(1, 8200 * 2, h200_sms, 4, h200_l2) == 1);
  CHECK(wide_grid(4096, 65536 * 12, h200_sms, 1, h200_l2) == h200_sms);
  // the backward's partials ([P, cols] fp32, two of them) stay within 64 * sms * cols bytes
  CHECK(8 * wide_grid(1 << 20, 9000 * 2, h200_sms, 16, 1LL << 40) <= 64 * h200_sms);
}
