// Tests of the CPU softmax arms (generic seam) against a float64 reference written here: random
// inputs, rows = 1, large-offset and constant rows, poisoned outputs, what each pass may read,
// write and allocate, and the argument checks.
#include "cpu/softmax_arms.hpp"

#include "base/rng.hpp"
#include "prereg/error.hpp"
#include "prereg/ops/softmax.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <new>
#include <string>
#include <vector>

using namespace prereg;

namespace {

constexpr std::uint32_t poison_bits = 0x7fe5a5a5u; // a quiet NaN no arm computes

// malloc-backed; counts what is held, its peak and the calls, and refuses foreign pointers.
class counting_allocator final : public step_allocator {
public:
  void *allocate(std::size_t bytes) override {
    void *p = std::malloc(bytes ? bytes : 1);
    if (p == nullptr)
      throw std::bad_alloc();
    m_live[p] = bytes;
    held += bytes;
    peak = std::max(peak, held);
    ++count;
    return p;
  }
  void release(void *p) override {
    const auto it = m_live.find(p);
    REQUIRE(it != m_live.end());
    held -= it->second;
    m_live.erase(it);
    std::free(p);
  }
  std::size_t held = 0, peak = 0, count = 0;

private:
  std::map<void *, std::size_t> m_live;
};

std::vector<float> poisoned(std::size_t n) {
  return std::vector<float>(n, std::bit_cast<float>(poison_bits));
}

bool is_poison(float v) { return std::bit_cast<std::uint32_t>(v) == poison_bits; }

// U(lo, hi) in fp32, never exactly zero.
float nonzero_uniform(rng &r, double lo, double hi) {
  for (;;) {
    const auto v = static_cast<float>(lo + (hi - lo) * r.uniform());
    if (v != 0.0f)
      return v;
  }
}

enum class row_kind { random, large_offset, constant };

struct case_inputs {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> x, dy;
};

// x ~ U(-2, 2) per row, or 1e4 + U(-1, 1) (the max subtraction matters: exp(1e4) overflows),
// or one constant; dy ~ U(-1, 1).
case_inputs make_inputs(std::int64_t rows, std::int64_t cols, const std::vector<row_kind> &kinds,
                        std::uint64_t seed) {
  rng r(seed);
  case_inputs in{rows, cols, {}, {}};
  const auto n = static_cast<std::size_t>(rows * cols);
  in.x.resize(n);
  in.dy.resize(n);
  for (std::int64_t i = 0; i < rows; ++i) {
    const row_kind k = kinds[static_cast<std::size_t>(i) % kinds.size()];
    const float c = nonzero_uniform(r, -3, 3);
    for (std::int64_t j = 0; j < cols; ++j) {
      float &v = in.x[static_cast<std::size_t>(i * cols + j)];
      switch (k) {
      case row_kind::random:
        v = nonzero_uniform(r, -2, 2);
        break;
      case row_kind::large_offset:
        v = static_cast<float>(1e4 + (2 * r.uniform() - 1));
        break;
      case row_kind::constant:
        v = c;
        break;
      }
    }
  }
  for (float &v : in.dy)
    v = nonzero_uniform(r, -1, 1);
  return in;
}

struct ref_outputs {
  std::vector<double> y, dx;
};

// The float64 reference from the fp32 inputs.
ref_outputs reference(const case_inputs &in) {
  const std::int64_t rows = in.rows, cols = in.cols;
  ref_outputs out;
  out.y.resize(in.x.size());
  out.dx.resize(in.x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::size_t o = static_cast<std::size_t>(r * cols);
    double m = in.x[o];
    for (std::int64_t j = 1; j < cols; ++j)
      m = std::max(m, static_cast<double>(in.x[o + j]));
    double sum = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      sum += out.y[o + j] = std::exp(static_cast<double>(in.x[o + j]) - m);
    for (std::int64_t j = 0; j < cols; ++j)
      out.y[o + j] /= sum;
    double dot = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      dot += static_cast<double>(in.dy[o + j]) * out.y[o + j];
    for (std::int64_t j = 0; j < cols; ++j)
      out.dx[o + j] = out.y[o + j] * (in.dy[o + j] - dot);
  }
  return out;
}

struct arm_outputs {
  std::vector<float> y, dx;
  std::size_t fwd_peak = 0, fwd_count = 0, bwd_peak = 0, bwd_count = 0;
};

// Runs the arm's forward (and backward) with y and dx poisoned first; checks that each pass
// releases what it allocated, leaves its inputs alone and writes nothing of the other pass.
arm_outputs run_arm(const arm_entry &arm, const case_inputs &in, bool backward) {
  const auto n = in.x.size();
  std::vector<float> x = in.x, dy = in.dy;
  arm_outputs out{poisoned(n), poisoned(n), 0, 0, 0, 0};
  void *data[4] = {x.data(), out.y.data(), dy.data(), out.dx.data()};
  tensor_args t;
  t.data = data;
  t.count = 4;
  t.rows = in.rows;
  t.cols = in.cols;
  t.type = dtype::fp32;

  counting_allocator fwd_alloc;
  arm.forward(t, fwd_alloc, nullptr);
  CHECK(fwd_alloc.held == 0);
  out.fwd_peak = fwd_alloc.peak;
  out.fwd_count = fwd_alloc.count;
  CHECK(x == in.x);
  CHECK(std::all_of(out.dx.begin(), out.dx.end(), is_poison));
  if (backward) {
    const std::vector<float> y_after_fwd = out.y;
    counting_allocator bwd_alloc;
    arm.backward(t, bwd_alloc, nullptr);
    CHECK(bwd_alloc.held == 0);
    out.bwd_peak = bwd_alloc.peak;
    out.bwd_count = bwd_alloc.count;
    CHECK(dy == in.dy);
    CHECK(x == in.x);
    // Bitwise: the backward reads y and must not write it (NaN != NaN, so compare bits).
    CHECK(std::equal(out.y.begin(), out.y.end(), y_after_fwd.begin(), [](float a, float b) {
      return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
    }));
  }
  return out;
}

// Every element within rtol of its own magnitude plus atol of the tensor's largest magnitude;
// names the first element that is not (a poisoned or NaN element never passes).
void expect_close(const char *name, const std::vector<float> &got, const std::vector<double> &ref,
                  double rtol, double atol, std::int64_t cols) {
  REQUIRE(got.size() == ref.size());
  double scale = 0;
  for (const double r : ref)
    scale = std::max(scale, std::fabs(r));
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
    if (!(err <= rtol * std::fabs(ref[i]) + atol * scale)) {
      FAIL_CHECK(fmt::format("{} row {} col {}: got {}{}, expected {}", name,
                             static_cast<std::int64_t>(i) / cols,
                             static_cast<std::int64_t>(i) % cols, got[i],
                             is_poison(got[i]) ? " (unwritten)" : "", ref[i]));
      return;
    }
  }
}

struct arm_case {
  const char *name;
  const arm_entry *entry;
  bool allocates;
};

const arm_case arms[] = {
    {"softmax.unfused", &cpu::softmax_unfused_entry, true},
    {"softmax.fused", &cpu::softmax_fused_entry, false},
};

struct shape_case {
  std::int64_t rows, cols;
  std::vector<row_kind> kinds; ///< cycled over the rows
};

const std::vector<shape_case> shapes{
    {1, 1, {row_kind::random}},
    {1, 8, {row_kind::random}},
    {1, 1024, {row_kind::large_offset}},
    {1, 896, {row_kind::constant}},
    {3, 7, {row_kind::random, row_kind::large_offset, row_kind::constant}},
    {37, 1024, {row_kind::large_offset, row_kind::random, row_kind::constant, row_kind::random}},
    {5, 4096, {row_kind::random, row_kind::constant, row_kind::large_offset}},
    {64, 129, {row_kind::random}},
    {2, 8192, {row_kind::constant, row_kind::random}},
};

} // namespace

TEST_CASE("the CPU softmax arms match the float64 reference, forward and backward") {
  std::uint64_t seed = 0x50f7;
  for (const arm_case &arm : arms) {
    for (const shape_case &s : shapes) {
      for (const bool backward : {false, true}) {
        CAPTURE(arm.name);
        CAPTURE(s.rows);
        CAPTURE(s.cols);
        CAPTURE(backward);
        const case_inputs in = make_inputs(s.rows, s.cols, s.kinds, ++seed);
        const ref_outputs ref = reference(in);
        const arm_outputs got = run_arm(*arm.entry, in, backward);
        // y > 0: relative to each element (the max subtraction keeps it so for large offsets).
        expect_close("y", got.y, ref.y, 2e-5, 0, s.cols);
        if (backward)
          expect_close("dx", got.dx, ref.dx, 1e-5, 1e-6, s.cols);
        else
          CHECK(std::all_of(got.dx.begin(), got.dx.end(), is_poison));
      }
    }
  }
}

TEST_CASE("a constant row gives exactly uniform probabilities") {
  for (const arm_case &arm : arms) {
    CAPTURE(arm.name);
    case_inputs in = make_inputs(2, 64, {row_kind::constant}, 9);
    const arm_outputs got = run_arm(*arm.entry, in, true);
    for (const float v : got.y)
      CHECK(v == 1.0f / 64.0f); // exp(0) = 1 exactly, a sum of 64 ones, a power-of-two divide
  }
}

TEST_CASE("the fused arm allocates nothing; the unfused one stays within its stated scratch") {
  const case_inputs in = make_inputs(33, 300, {row_kind::random}, 21);
  const auto n = static_cast<std::size_t>(in.rows * in.cols);
  const auto rows = static_cast<std::size_t>(in.rows);
  const arm_outputs fused = run_arm(cpu::softmax_fused_entry, in, true);
  CHECK(fused.fwd_count == 0);
  CHECK(fused.fwd_peak == 0);
  CHECK(fused.bwd_count == 0);
  const arm_outputs unfused = run_arm(cpu::softmax_unfused_entry, in, true);
  CHECK(unfused.fwd_count > 0);
  CHECK(unfused.fwd_peak > 0);
  CHECK(unfused.fwd_peak <= 8 * n + 8 * rows); // kernels/cpu/softmax_unfused.arm: scratch_fwd
  CHECK(unfused.bwd_count > 0);
  CHECK(unfused.bwd_peak <= 8 * n + 4 * rows); // scratch_bwd
}

TEST_CASE("the CPU softmax arms refuse what they cannot run") {
  std::vector<float> a(16, 1.0f), b(16, 1.0f), c(16, 1.0f), d(16, 1.0f);
  void *data[4] = {a.data(), b.data(), c.data(), d.data()};
  counting_allocator alloc;
  for (const arm_case &arm : arms) {
    CAPTURE(arm.name);
    tensor_args t;
    t.data = data;
    t.count = 4;
    t.rows = 2;
    t.cols = 8;
    t.type = dtype::fp16;
    CHECK_THROWS_WITH(arm.entry->forward(t, alloc, nullptr),
                      (std::string(arm.name) + ": needs fp32 and rows, cols >= 1").c_str());
    t.type = dtype::fp32;
    t.rows = 0;
    CHECK_THROWS_AS(arm.entry->forward(t, alloc, nullptr), error);
    t.rows = 2;
    data[softmax::dy] = nullptr;
    CHECK_NOTHROW(arm.entry->forward(t, alloc, nullptr)); // the forward does not use dy
    CHECK_THROWS_WITH(arm.entry->backward(t, alloc, nullptr),
                      (std::string(arm.name) + ": a buffer it needs is null").c_str());
    data[softmax::dy] = c.data();
    t.count = 3;
    CHECK_THROWS_AS(arm.entry->forward(t, alloc, nullptr), error);
    CHECK(alloc.held == 0);
  }
}
