// Every CUDA arm x dtype x pass against the float64 reference on adversarial shapes and data,
// with fresh random inputs and poisoned outputs.
#include "device_helpers.hpp"

#include "base/rng.hpp"
#include "spec/registry.hpp"

#include <fmt/format.h>

#include <cmath>

using namespace prereg;
using namespace prereg::device_test;

namespace {

struct case_shape {
  std::int64_t rows, cols;
  bool adversarial; ///< row 0: mean 1e4, std 1e-2; row 1: constant
};

// rows = 1; rows not a multiple of any rows-per-block (8, 4, 2); non-power-of-two cols (896,
// 136, 1032); every threads-per-row class up to 8192; more rows than one persistent sweep.
const std::vector<case_shape> shapes{
    {1, 896, false},  {1, 8192, false}, {37, 1024, true},    {13, 8192, true},
    {9, 896, true},   {7, 2048, false}, {5, 4096, true},     {3, 8, false},
    {11, 136, false}, {6, 1032, false}, {3001, 1024, false}, {2500, 896, false},
};

struct run_result {
  reference::outputs64 out;
  std::size_t peak = 0;
};

/// Makes row 0 mean 1e4 / std 1e-2 and row 1 constant, rounded to the dtype.
void make_adversarial(reference::inputs64 &in, dtype type, std::uint64_t seed) {
  rng r(seed);
  const auto cols = static_cast<std::size_t>(in.cols);
  for (std::size_t c = 0; c < cols; ++c) {
    // uniform with std 1e-2: half-width 1e-2 * sqrt(3)
    in.x[c] = 1e4 + (2 * r.uniform() - 1) * 1e-2 * std::sqrt(3.0);
    if (in.rows > 1)
      in.x[cols + c] = 0.75;
  }
  in.x = reference::unpack(reference::pack(in.x, type), type);
}

run_result run_arm(const arm_ops &ops, const reference::inputs64 &in, dtype type, bool backward) {
  const auto n = static_cast<std::size_t>(in.rows * in.cols);
  const auto c = static_cast<std::size_t>(in.cols);
  const auto r = static_cast<std::size_t>(in.rows);
  const std::size_t e = element_bytes(type);
  buffer x(n * e), gamma(c * e), beta(c * e), y(n * e), mean(r * 4), rstd(r * 4), dy(n * e),
      dx(n * e), dgamma(c * e), dbeta(c * e);
  x.upload(reference::pack(in.x, type));
  gamma.upload(reference::pack(in.gamma, type));
  beta.upload(reference::pack(in.beta, type));
  dy.upload(reference::pack(in.dy, type));
  y.upload(reference::poison(n, type));
  dx.upload(reference::poison(n, type));
  dgamma.upload(reference::poison(c, type));
  dbeta.upload(reference::poison(c, type));
  mean.upload(reference::poison(r, dtype::fp32));
  rstd.upload(reference::poison(r, dtype::fp32));
  norm_tensors t{x.get(),
                 gamma.get(),
                 beta.get(),
                 y.get(),
                 static_cast<float *>(mean.get()),
                 static_cast<float *>(rstd.get()),
                 dy.get(),
                 dx.get(),
                 dgamma.get(),
                 dbeta.get(),
                 in.rows,
                 in.cols,
                 type};
  counting_allocator alloc;
  ops.forward(t, alloc, nullptr);
  if (backward)
    ops.backward(t, alloc, nullptr);
  ok(cudaDeviceSynchronize(), "arm run");
  CHECK(alloc.current() == 0);
  run_result res;
  res.peak = alloc.peak();
  res.out.y = y.download(n, type);
  res.out.mean = mean.download(r, dtype::fp32);
  res.out.rstd = rstd.download(r, dtype::fp32);
  if (backward) {
    res.out.dx = dx.download(n, type);
    res.out.dgamma = dgamma.download(c, type);
    res.out.dbeta = dbeta.download(c, type);
  }
  return res;
}

/// Checks one output and says which element failed first.
void expect_close(const char *name, const std::vector<double> &got, const std::vector<double> &ref,
                  const correctness_spec &tol, std::int64_t cols) {
  const reference::comparison cmp = reference::compare(got, ref, tol.rtol, tol.atol);
  std::string where = "-";
  if (cmp.first_bad >= 0) {
    const auto i = static_cast<std::size_t>(cmp.first_bad);
    where = fmt::format("element {} (row {}, col {}): got {}, expected {}", i,
                        cols ? cmp.first_bad / cols : 0,
                        cols ? cmp.first_bad % cols : cmp.first_bad, got[i], ref[i]);
  }
  INFO(name, ": max_abs ", cmp.max_abs_error, " max_rel ", cmp.max_rel_error, " first bad ", where);
  CHECK_FALSE(cmp.unwritten);
  CHECK(cmp.passed);
}

/// Runs `arm` on fresh inputs of shape `s` (adversarial rows if asked) and checks every output
/// against the float64 reference with the dtype's default tolerance, and the peak allocation
/// against the registry.
void check_against_reference(const arm_info &arm, dtype type, pass_kind pass, const case_shape &s,
                             std::uint64_t &seed) {
  const operation norm = arm.op == "layernorm" ? operation::layernorm : operation::rmsnorm;
  const arm_ops *ops = cuda_arm_ops(arm.name);
  REQUIRE_MESSAGE(ops != nullptr, arm.name);
  const correctness_spec tol = default_tolerance(type);
  CAPTURE(arm.name);
  CAPTURE(to_string(type));
  CAPTURE(to_string(pass));
  CAPTURE(s.rows);
  CAPTURE(s.cols);
  REQUIRE_FALSE(cannot_run(arm, pass, s.rows, s.cols, type).has_value());
  const bool bwd = pass == pass_kind::fwd_bwd;
  reference::inputs64 in = reference::random_inputs(s.rows, s.cols, type, ++seed);
  if (s.adversarial)
    make_adversarial(in, type, ++seed);
  const reference::outputs64 ref = reference::compute(norm, in, bwd);
  const run_result got = run_arm(*ops, in, type, bwd);
  expect_close("y", got.out.y, ref.y, tol, s.cols);
  if (norm == operation::layernorm)
    expect_close("mean", got.out.mean, ref.mean, tol, 0);
  expect_close("rstd", got.out.rstd, ref.rstd, tol, 0);
  if (bwd) {
    expect_close("dx", got.out.dx, ref.dx, tol, s.cols);
    expect_close("dgamma", got.out.dgamma, ref.dgamma, tol, 0);
    if (norm == operation::layernorm)
      expect_close("dbeta", got.out.dbeta, ref.dbeta, tol, 0);
  }
  const bool allocates = bwd ? (arm.allocates_fwd || arm.allocates_bwd) : arm.allocates_fwd;
  if (allocates)
    CHECK(got.peak > 0);
  else
    CHECK(got.peak == 0);
}

/// The fused norm arms (the ones with the small-row and wide-row layouts).
std::vector<const arm_info *> fused_norm_arms() {
  std::vector<const arm_info *> arms;
  for (const char *name : {"layernorm.fused", "rmsnorm.fused"}) {
    const arm_info *arm = find_arm("cuda", name);
    REQUIRE_MESSAGE(arm != nullptr, name);
    arms.push_back(arm);
  }
  return arms;
}

} // namespace

TEST_CASE("every CUDA arm matches the float64 reference on adversarial shapes") {
  std::uint64_t seed = 0x5eed;
  for (const arm_info &arm : all_arms()) {
    if (arm.device != "cuda" || arm.abi != "norm")
      continue; // the generic-seam arms have their own test
    for (const dtype type : arm.dtypes)
      for (const pass_kind pass : {pass_kind::fwd, pass_kind::fwd_bwd})
        for (const case_shape &s : shapes)
          check_against_reference(arm, type, pass, s, seed);
  }
}

TEST_CASE("fused norms: small row counts (the spread forward layout) match the reference") {
  // 1..512 rows fill fewer than 132 SMs with the register layout (8 rows per block at 896 and
  // 1024 cols, 2 at fp32 4096), so the forward spreads each row over a block of its own;
  // 1048 and 1056 rows of 1024 fp32 sit on either side of that threshold on an H200, 131 and
  // 132 rows of 8192 likewise (fp32; 16-bit 8192 rows take 256 threads as well).
  std::vector<case_shape> small;
  for (const std::int64_t cols : {896, 1024, 4096})
    for (const std::int64_t rows : {1, 2, 7, 128, 512})
      small.push_back({rows, cols, rows >= 2 && rows % 2 == 0});
  small.push_back({1048, 1024, false});
  small.push_back({1056, 1024, true});
  small.push_back({131, 8192, true});
  small.push_back({132, 8192, false});
  small.push_back({5, 8, false});
  small.push_back({3, 264, true});
  std::uint64_t seed = 0x5a11;
  for (const arm_info *arm : fused_norm_arms())
    for (const dtype type : arm->dtypes)
      for (const pass_kind pass : {pass_kind::fwd, pass_kind::fwd_bwd})
        for (const case_shape &s : small)
          check_against_reference(*arm, type, pass, s, seed);
}

TEST_CASE("fused norms: wide rows (8192 < cols <= 65536) match the reference") {
  // 300 rows of 16384 and 140 rows of 65536: more rows than the wide grid's blocks (about one
  // per SM where the re-read rows would overflow L2), so blocks take several rows and the
  // backward adds into its partial row after storing it.
  const std::vector<case_shape> wide{
      {1, 8200, false},   {3, 8200, true},     {3, 16384, true},  {64, 16384, false},
      {300, 16384, true}, {1, 32768, false},   {64, 32768, true}, {1, 65536, false},
      {3, 65536, true},   {140, 65536, false},
  };
  std::uint64_t seed = 0x91de;
  for (const arm_info *arm : fused_norm_arms())
    for (const dtype type : arm->dtypes)
      for (const pass_kind pass : {pass_kind::fwd, pass_kind::fwd_bwd})
        for (const case_shape &s : wide)
          check_against_reference(*arm, type, pass, s, seed);
}

TEST_CASE("fused norms: the wide and widened backwards are deterministic") {
  // wide rows with several rows per block; the 16-bit LayerNorm backward's 512-thread layouts
  // (4096 cols: 1 vector and 4 rows in flight per thread; 8192: 2 vectors and 2 rows)
  const std::vector<std::pair<std::int64_t, std::int64_t>> cases{
      {300, 16384}, {140, 65536}, {3, 32768}, {2503, 4096}, {1031, 8192}};
  for (const arm_info *arm : fused_norm_arms()) {
    for (const dtype type : {dtype::fp32, dtype::fp16, dtype::bf16}) {
      for (const auto &[rows, cols] : cases) {
        CAPTURE(arm->name);
        CAPTURE(to_string(type));
        CAPTURE(rows);
        CAPTURE(cols);
        const reference::inputs64 in = reference::random_inputs(rows, cols, type, 4242);
        const run_result a = run_arm(*cuda_arm_ops(arm->name), in, type, true);
        const run_result b = run_arm(*cuda_arm_ops(arm->name), in, type, true);
        CHECK(a.out.dx == b.out.dx);
        CHECK(a.out.dgamma == b.out.dgamma);
        if (arm->op == "layernorm")
          CHECK(a.out.dbeta == b.out.dbeta); // RMSNorm leaves dbeta (poisoned with NaN) alone
        CHECK(a.out.y == b.out.y);
      }
    }
  }
}

TEST_CASE("the fused backward is deterministic (fixed-order partial reduction)") {
  for (const char *name : {"layernorm.fused", "rmsnorm.fused", "layernorm.unfused"}) {
    CAPTURE(name);
    const arm_info *arm = find_arm("cuda", name);
    REQUIRE(arm != nullptr);
    const reference::inputs64 in = reference::random_inputs(4099, 1024, dtype::fp32, 77);
    const run_result a = run_arm(*cuda_arm_ops(name), in, dtype::fp32, true);
    const run_result b = run_arm(*cuda_arm_ops(name), in, dtype::fp32, true);
    CHECK(a.out.dgamma == b.out.dgamma);
    CHECK(a.out.dx == b.out.dx);
  }
}

TEST_CASE("an unknown kernel name has no CUDA entry points") {
  CHECK(cuda_arm_ops("layernorm.nonexistent") == nullptr);
  CHECK(cuda_arm_ops("") == nullptr);
}
