// Tests of the bytes model and the GB/s and % of ceiling derived from it.
#include "prereg/error.hpp"
#include "spec/bytes_model.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace prereg;

TEST_CASE("LayerNorm bytes") {
  // fp32, M = 2, N = 4: M*N*s = 32, N*s = 16, M*4 = 8.
  // fwd: x + y (64) + gamma, beta (32) + mean, rstd (16) = 112.
  CHECK(bytes_per_invocation("layernorm", dtype::fp32, pass_kind::fwd, 2, 4) == 112);
  // bwd adds x, dy, dx (96) + gamma (16) + mean, rstd (16) + dgamma, dbeta (32) = 160.
  CHECK(bytes_per_invocation("layernorm", dtype::fp32, pass_kind::fwd_bwd, 2, 4) == 272);
  // bf16 128 x 1024: 2 * 262144 + 2 * 2048 + 2 * 512.
  CHECK(bytes_per_invocation("layernorm", dtype::bf16, pass_kind::fwd, 128, 1024) == 529408);
}

TEST_CASE("RMSNorm bytes") {
  // fp16, M = 2, N = 4: M*N*s = 16, N*s = 8, M*4 = 8.
  // fwd: x + y (32) + gamma (8) + rstd (8) = 48.
  CHECK(bytes_per_invocation("rmsnorm", dtype::fp16, pass_kind::fwd, 2, 4) == 48);
  // bwd adds x, dy, dx (48) + gamma (8) + rstd (8) + dgamma (8) = 72.
  CHECK(bytes_per_invocation("rmsnorm", dtype::fp16, pass_kind::fwd_bwd, 2, 4) == 120);
}

TEST_CASE("a step moves repeat invocations") {
  CHECK(bytes_per_step("layernorm", dtype::fp32, pass_kind::fwd, 2, 4, 3) == 336);
  CHECK_THROWS_WITH(
      static_cast<void>(bytes_per_step("layernorm", dtype::fp32, pass_kind::fwd, 2, 4, 0)),
      "repeat 0 is below 1");
}

TEST_CASE("bad shapes are refused") {
  try {
    static_cast<void>(
        bytes_per_invocation("rmsnorm", dtype::fp32, pass_kind::fwd, 1LL << 40, 1LL << 40));
    FAIL("no error");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::invalid);
    CHECK(std::string(e.what()) == "bytes model overflows 64 bits");
  }
  CHECK_THROWS_AS(
      static_cast<void>(bytes_per_invocation("rmsnorm", dtype::fp32, pass_kind::fwd, -1, 4)),
      error);
}

TEST_CASE("GB/s and percent of ceiling") {
  CHECK(gbps(1000000000, 1.0) == doctest::Approx(1000.0));
  CHECK(gbps(529408, 0.002) == doctest::Approx(264.704));
  CHECK(gbps(1000, 2.0) == 1000.0 / (2.0 * 1e-3) / 1e9);
  CHECK(std::isnan(gbps(1000, 0.0)));
  CHECK(std::isnan(gbps(1000, -1.0)));
  CHECK(pct_ceiling(1500.0, 3000.0) == 50.0);
  CHECK(pct_ceiling(3300.0, 3000.0) == doctest::Approx(110.0));
  CHECK(std::isnan(pct_ceiling(1500.0, 0.0)));
}
