// Tests of the CPU arms against the float64 reference: shapes, passes, constant and
// ill-conditioned rows, what each arm allocates, and the source files each arm lists.
#include "spec/arm_code.hpp"
#include "spec/reference.hpp"

#include "prereg/error.hpp"
#include "spec/registry.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

using namespace prereg;

namespace {

// The entry points of the built-in CPU normalisation arm `name`, or null.
const arm_ops *cpu_arm_ops(std::string_view name) {
  const arm_info *a = find_arm("cpu", name);
  return a != nullptr ? builtin_arm_code(*a).norm : nullptr;
}

constexpr double eps32 = 0x1p-24; // unit roundoff of fp32

// malloc with a size header; counts what is held and its peak.
class counting_allocator final : public step_allocator {
public:
  void *allocate(std::size_t bytes) override {
    auto *p = static_cast<std::size_t *>(std::malloc(bytes + 16));
    if (p == nullptr)
      throw std::bad_alloc();
    *p = bytes;
    held += bytes;
    peak = std::max(peak, held);
    ++count;
    return reinterpret_cast<char *>(p) + 16;
  }
  void release(void *q) override {
    auto *p = reinterpret_cast<std::size_t *>(static_cast<char *>(q) - 16);
    held -= *p;
    std::free(p);
  }
  std::size_t held = 0, peak = 0, count = 0;
};

struct arm_result {
  std::vector<double> y, mean, rstd, dx, dgamma, dbeta;
  std::size_t fwd_peak = 0, bwd_peak = 0;
};

std::vector<double> floats(const std::vector<float> &v) { return {v.begin(), v.end()}; }

// Runs `kernel` on `in` with every output poisoned first.
arm_result run_arm(std::string_view kernel, const reference::inputs64 &in, bool backward) {
  const arm_ops *ops = cpu_arm_ops(kernel);
  REQUIRE(ops != nullptr);
  const auto n = static_cast<std::size_t>(in.rows * in.cols);
  const auto c = static_cast<std::size_t>(in.cols);
  auto x = reference::pack(in.x, dtype::fp32), gamma = reference::pack(in.gamma, dtype::fp32),
       beta = reference::pack(in.beta, dtype::fp32), dy = reference::pack(in.dy, dtype::fp32);
  auto y = reference::poison(n, dtype::fp32), dx = reference::poison(n, dtype::fp32);
  auto dgamma = reference::poison(c, dtype::fp32), dbeta = reference::poison(c, dtype::fp32);
  const auto stats = reference::poison(static_cast<std::size_t>(in.rows), dtype::fp32);
  std::vector<float> mean(in.rows), rstd(in.rows);
  std::memcpy(mean.data(), stats.data(), stats.size());
  std::memcpy(rstd.data(), stats.data(), stats.size());
  const norm_tensors t{x.data(),    gamma.data(), beta.data(), y.data(),      mean.data(),
                       rstd.data(), dy.data(),    dx.data(),   dgamma.data(), dbeta.data(),
                       in.rows,     in.cols,      dtype::fp32};
  arm_result r;
  counting_allocator fwd_alloc, bwd_alloc;
  ops->forward(t, fwd_alloc, nullptr);
  CHECK(fwd_alloc.held == 0);
  r.fwd_peak = fwd_alloc.peak;
  if (backward) {
    ops->backward(t, bwd_alloc, nullptr);
    CHECK(bwd_alloc.held == 0);
    r.bwd_peak = bwd_alloc.peak;
    r.dx = reference::unpack(dx, dtype::fp32);
    r.dgamma = reference::unpack(dgamma, dtype::fp32);
    r.dbeta = reference::unpack(dbeta, dtype::fp32);
  }
  r.y = reference::unpack(y, dtype::fp32);
  r.mean = floats(mean);
  r.rstd = floats(rstd);
  return r;
}

operation op_of(std::string_view kernel) {
  return kernel.starts_with("layernorm") ? operation::layernorm : operation::rmsnorm;
}

void check_output(const char *name, const std::vector<double> &got, const std::vector<double> &ref,
                  double rtol, double atol) {
  INFO(name);
  const auto c = reference::compare(got, ref, rtol, atol);
  CHECK_FALSE(c.unwritten);
  if (!c.passed) {
    const auto i = static_cast<std::size_t>(c.first_bad);
    INFO(fmt::format("element {}: got {:.9g}, reference {:.9g}, max abs error {:.3g}", i, got[i],
                     ref[i], c.max_abs_error));
    CHECK(c.passed);
  }
}

// Checks an arm against the reference; `scale` widens atol for outputs whose magnitude is
// set by rstd (fp32 tolerance relative to the output's largest reference value).
void check_arm(std::string_view kernel, const reference::inputs64 &in, bool backward,
               double rtol = 1e-5, double atol = 1e-5) {
  const operation op = op_of(kernel);
  const auto ref = reference::compute(op, in, backward);
  const auto got = run_arm(kernel, in, backward);
  auto scaled = [&](const std::vector<double> &r) {
    double m = 1;
    for (double v : r)
      m = std::max(m, std::fabs(v));
    return atol * m;
  };
  check_output("y", got.y, ref.y, rtol, atol);
  check_output("rstd", got.rstd, ref.rstd, rtol, scaled(ref.rstd));
  if (op == operation::layernorm)
    check_output("mean", got.mean, ref.mean, rtol, atol);
  if (!backward)
    return;
  check_output("dx", got.dx, ref.dx, rtol, scaled(ref.dx));
  check_output("dgamma", got.dgamma, ref.dgamma, rtol, scaled(ref.dgamma));
  if (op == operation::layernorm)
    check_output("dbeta", got.dbeta, ref.dbeta, rtol, scaled(ref.dbeta));
}

const char *const kernels[] = {"layernorm.unfused", "layernorm.fused", "rmsnorm.unfused",
                               "rmsnorm.fused"};

// Inputs whose every row has mean `mean` and standard deviation about `std`.
reference::inputs64 offset_inputs(std::int64_t rows, std::int64_t cols, double mean, double std,
                                  std::uint64_t seed) {
  auto in = reference::random_inputs(rows, cols, dtype::fp32, seed);
  const auto noise = reference::random_inputs(rows, cols, dtype::fp32, seed + 1);
  for (std::size_t i = 0; i < in.x.size(); ++i)
    in.x[i] = reference::round_to(mean + std * (noise.dy[i] * std::sqrt(3.0)), dtype::fp32);
  return in;
}

// The largest |got - ref| over the largest |ref|.
double normwise_error(const std::vector<double> &got, const std::vector<double> &ref) {
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::isnan(got[i]) ? INFINITY : std::fabs(got[i] - ref[i]));
    scale = std::max(scale, std::fabs(ref[i]));
  }
  return err / scale;
}

// One-pass E[x^2] - E[x]^2 LayerNorm in fp32: what the two-pass arms must not be.
std::vector<double> naive_layernorm_y(const reference::inputs64 &in) {
  std::vector<double> y(in.x.size());
  for (std::int64_t r = 0; r < in.rows; ++r) {
    float s = 0, s2 = 0;
    for (std::int64_t j = 0; j < in.cols; ++j) {
      const auto v = static_cast<float>(in.x[r * in.cols + j]);
      s += v;
      s2 += v * v;
    }
    const float mean = s / static_cast<float>(in.cols);
    const float var = s2 / static_cast<float>(in.cols) - mean * mean;
    const float rstd = 1.0f / std::sqrt(var + 1e-5f);
    for (std::int64_t j = 0; j < in.cols; ++j)
      y[r * in.cols + j] = (static_cast<float>(in.x[r * in.cols + j]) - mean) * rstd *
                               static_cast<float>(in.gamma[j]) +
                           static_cast<float>(in.beta[j]);
  }
  return y;
}

// Every "cpu/NAME" a file includes, transitively, as repo-relative paths.
void includes_of(const std::string &rel, std::set<std::string> &seen) {
  if (!seen.insert(rel).second)
    return;
  std::ifstream in(std::string(PREREG_SOURCE_DIR) + "/" + rel);
  REQUIRE_MESSAGE(in.good(), rel);
  for (std::string line; std::getline(in, line);) {
    const std::string tag = "#include \"cpu/";
    if (line.rfind(tag, 0) != 0)
      continue;
    const auto end = line.find('"', tag.size());
    includes_of("kernels/cpu/" + line.substr(tag.size(), end - tag.size()), seen);
  }
}

} // namespace

TEST_CASE("every CPU arm of the registry has built-in code on its seam") {
  int norm_arms = 0;
  for (const auto &a : all_arms()) {
    if (a.device != "cpu")
      continue;
    const arm_code code = builtin_arm_code(a);
    INFO(a.name);
    CHECK_FALSE(code.empty());
    CHECK((code.norm != nullptr) == (a.abi == "norm"));
    CHECK((code.entry != nullptr) == (a.abi == "tensors"));
    norm_arms += a.abi == "norm" ? 1 : 0;
  }
  CHECK(norm_arms == 4);
  CHECK(cpu_arm_ops("layernorm.lockgroup") == nullptr);
  CHECK(cpu_arm_ops("") == nullptr);
}

TEST_CASE("each CPU arm's source list is its file plus the headers it includes") {
  for (const char *k : kernels) {
    const arm_info *a = find_arm("cpu", k);
    REQUIRE(a != nullptr);
    std::string file = k;
    std::replace(file.begin(), file.end(), '.', '_');
    std::set<std::string> expected;
    includes_of("kernels/cpu/" + file + ".cpp", expected);
    const std::set<std::string> listed(a->sources.begin(), a->sources.end());
    CHECK_MESSAGE(listed == expected, k);
    CHECK(a->source_sha256.size() == 64);
  }
}

TEST_CASE("CPU arms match the float64 reference on fresh random inputs") {
  std::uint64_t seed = 1000;
  for (const char *k : kernels)
    for (std::int64_t rows : {1, 3, 64})
      for (std::int64_t cols : {1, 7, 896, 1024})
        for (bool backward : {false, true}) {
          INFO(fmt::format("{} {}x{} {}", k, rows, cols, backward ? "fwd+bwd" : "fwd"));
          check_arm(k, reference::random_inputs(rows, cols, dtype::fp32, ++seed), backward);
        }
}

TEST_CASE("CPU arms on a tall shape (the dgamma/dbeta cascade carries)") {
  for (const char *k : kernels) {
    INFO(k);
    check_arm(k, reference::random_inputs(2100, 5, dtype::fp32, 77), true);
  }
}

TEST_CASE("CPU arms on constant rows") {
  // Variance 0: LayerNorm's rstd is 1/sqrt(eps) ~ 316, so an fp32 mean that is off by an ulp
  // of the value c shows up in y as ulp(c) * 316. atol is scaled by |c| * rstd, the row's
  // condition; RMSNorm's |c| * rstd stays below 1.
  for (const char *k : kernels)
    for (double value : {0.0, 0.1, -3.0, 1e4}) {
      if (value == 0.0 && op_of(k) == operation::rmsnorm)
        continue; // covered below
      INFO(fmt::format("{} constant {}", k, value));
      auto in = reference::random_inputs(3, 896, dtype::fp32, 5);
      const double c = reference::round_to(value, dtype::fp32);
      std::fill(in.x.begin(), in.x.end(), c);
      const double rstd =
          1 / std::sqrt((op_of(k) == operation::layernorm ? 0.0 : c * c) + norm_eps(op_of(k)));
      const double atol = 1e-5 * std::max(1.0, std::fabs(c) * rstd);
      check_arm(k, in, true, 1e-5, atol);
      if (op_of(k) == operation::layernorm) {
        const auto got = run_arm(k, in, false);
        for (std::size_t j = 0; j < 896; ++j) // xhat = 0: y = beta
          CHECK(std::fabs(got.y[j] - in.beta[j]) <= atol);
      }
    }
  SUBCASE("RMSNorm of a zero row is zero, rstd 1/sqrt(eps)") {
    for (const char *k : {"rmsnorm.unfused", "rmsnorm.fused"}) {
      auto in = reference::random_inputs(2, 64, dtype::fp32, 6);
      std::fill(in.x.begin(), in.x.end(), 0.0);
      const auto got = run_arm(k, in, true);
      for (double v : got.y)
        CHECK(v == 0.0);
      CHECK(got.rstd[0] == doctest::Approx(1000.0).epsilon(1e-6));
    }
  }
}

TEST_CASE("two-pass statistics hold up on rows with mean 1e4 and std 1e-2") {
  // Condition of the row: |mean| / std = 1e6. fp32 cannot even hold the mean closer than
  // half an ulp of 1e4 (~4.9e-4 = 0.05 std), so the bound is a multiple of eps32 * 1e6; the
  // one-pass formula E[x^2] - E[x]^2 loses the variance entirely and misses it by far.
  const double cond = 1e4 / 1e-2;
  const double bound = 8 * eps32 * cond; // ~0.48 in units of the output's largest value
  for (std::int64_t cols : {7, 896, 1024}) {
    const auto in = offset_inputs(3, cols, 1e4, 1e-2, 42 + cols);
    const auto ref = reference::compute(operation::layernorm, in, true);
    INFO(fmt::format("cols {}", cols));
    if (cols >= 896)
      CHECK(normwise_error(naive_layernorm_y(in), ref.y) > bound);
    for (const char *k : {"layernorm.unfused", "layernorm.fused"}) {
      INFO(k);
      const auto got = run_arm(k, in, true);
      CHECK(normwise_error(got.y, ref.y) < bound);
      CHECK(normwise_error(got.rstd, ref.rstd) < bound);
      CHECK(normwise_error(got.dx, ref.dx) < bound);
      CHECK(normwise_error(got.dgamma, ref.dgamma) < bound);
      CHECK(normwise_error(got.dbeta, ref.dbeta) < 1e-5);
    }
  }
  SUBCASE("RMSNorm is well conditioned there: the plain fp32 tolerance holds") {
    const auto in = offset_inputs(3, 1024, 1e4, 1e-2, 7);
    for (const char *k : {"rmsnorm.unfused", "rmsnorm.fused"}) {
      INFO(k);
      check_arm(k, in, true);
    }
  }
}

TEST_CASE("what the CPU arms allocate matches the registry") {
  const auto in = reference::random_inputs(8, 96, dtype::fp32, 3);
  for (const char *k : kernels) {
    INFO(k);
    const arm_info *a = find_arm("cpu", k);
    REQUIRE(a != nullptr);
    const auto got = run_arm(k, in, true);
    CHECK((got.fwd_peak > 0) == a->allocates_fwd);
    CHECK((got.bwd_peak > 0) == a->allocates_bwd);
  }
  SUBCASE("an unfused forward holds at least two [rows*cols] intermediates at once") {
    const auto got = run_arm("layernorm.unfused", in, false);
    CHECK(got.fwd_peak >= 2 * 8 * 96 * sizeof(float));
  }
}

TEST_CASE("a CPU arm refuses a dtype other than fp32") {
  const arm_ops *ops = cpu_arm_ops("layernorm.fused");
  REQUIRE(ops != nullptr);
  counting_allocator alloc;
  norm_tensors t;
  t.rows = 1;
  t.cols = 1;
  t.type = dtype::fp16;
  CHECK_THROWS_AS(ops->forward(t, alloc, nullptr), prereg::error);
}
