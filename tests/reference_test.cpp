// Tests of the float64 reference: formulas, finite-difference gradients, 16-bit conversions,
// inputs, poison and compare.
#include "spec/reference.hpp"

#include "base/parallel.hpp"

#include "prereg/error.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

using namespace prereg;
using namespace prereg::reference;

namespace {

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

// L = sum(dy * y): its gradient is what backward returns.
double loss(operation op, const inputs64 &in) {
  const auto out = compute(op, in, false);
  double l = 0;
  for (std::size_t i = 0; i < out.y.size(); ++i)
    l += in.dy[i] * out.y[i];
  return l;
}

// Central difference of loss() with respect to v[i].
double numeric_grad(operation op, inputs64 in, std::vector<double> inputs64::*field,
                    std::size_t i) {
  const double h = 1e-6 * std::max(1.0, std::fabs((in.*field)[i]));
  (in.*field)[i] += h;
  const double up = loss(op, in);
  (in.*field)[i] -= 2 * h;
  const double down = loss(op, in);
  return (up - down) / (2 * h);
}

void check_gradients(operation op, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const auto in = random_inputs(rows, cols, dtype::fp32, seed);
  const auto out = compute(op, in, true);
  for (std::size_t i = 0; i < in.x.size(); ++i)
    CHECK(out.dx[i] == doctest::Approx(numeric_grad(op, in, &inputs64::x, i)).epsilon(1e-6));
  for (std::size_t c = 0; c < in.gamma.size(); ++c)
    CHECK(out.dgamma[c] ==
          doctest::Approx(numeric_grad(op, in, &inputs64::gamma, c)).epsilon(1e-6));
  if (op == operation::layernorm)
    for (std::size_t c = 0; c < in.beta.size(); ++c)
      CHECK(out.dbeta[c] ==
            doctest::Approx(numeric_grad(op, in, &inputs64::beta, c)).epsilon(1e-6));
}

} // namespace

TEST_CASE("reference LayerNorm and RMSNorm on a hand-computed row") {
  inputs64 in;
  in.rows = 1;
  in.cols = 4;
  in.x = {1, 2, 3, 4};
  in.gamma = {1, 2, 1, 1};
  in.beta = {0, 0, 0.5, 0};
  SUBCASE("LayerNorm: mean 2.5, biased variance 1.25") {
    const auto out = compute(operation::layernorm, in, false);
    const double rstd = 1 / std::sqrt(1.25 + 1e-5);
    CHECK(out.mean[0] == doctest::Approx(2.5).epsilon(1e-15));
    CHECK(out.rstd[0] == doctest::Approx(rstd).epsilon(1e-15));
    CHECK(out.y[0] == doctest::Approx(-1.5 * rstd).epsilon(1e-15));
    CHECK(out.y[1] == doctest::Approx(-0.5 * rstd * 2).epsilon(1e-15));
    CHECK(out.y[2] == doctest::Approx(0.5 * rstd + 0.5).epsilon(1e-15));
    CHECK(out.dx.empty());
  }
  SUBCASE("RMSNorm: mean square 7.5, eps 1e-6, beta ignored") {
    const auto out = compute(operation::rmsnorm, in, false);
    const double rstd = 1 / std::sqrt(7.5 + 1e-6);
    CHECK(out.rstd[0] == doctest::Approx(rstd).epsilon(1e-15));
    CHECK(out.y[1] == doctest::Approx(2 * rstd * 2).epsilon(1e-15));
    CHECK(out.y[2] == doctest::Approx(3 * rstd).epsilon(1e-15));
  }
  SUBCASE("a shape mismatch is refused") {
    in.gamma.pop_back();
    CHECK_THROWS_AS((void)compute(operation::layernorm, in, false), prereg::error);
  }
}

TEST_CASE("reference backward matches finite differences of sum(dy * y)") {
  SUBCASE("LayerNorm") { check_gradients(operation::layernorm, 3, 7, 11); }
  SUBCASE("RMSNorm") { check_gradients(operation::rmsnorm, 3, 7, 12); }
  SUBCASE("LayerNorm, one column (variance 0)") {
    const auto in = random_inputs(2, 1, dtype::fp32, 5);
    const auto out = compute(operation::layernorm, in, true);
    CHECK(out.dx[0] == 0.0);
    CHECK(out.dx[1] == 0.0);
    CHECK(out.dbeta[0] == doctest::Approx(in.dy[0] + in.dy[1]));
  }
}

TEST_CASE("float_to_half rounds to nearest even, with inf, NaN and subnormals") {
  CHECK(float_to_half(1.0f) == 0x3c00);
  CHECK(float_to_half(-2.0f) == 0xc000);
  CHECK(float_to_half(0.1f) == 0x2e66);
  CHECK(float_to_half(0.0f) == 0x0000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(65504.0f) == 0x7bff);  // largest finite
  CHECK(float_to_half(65519.99f) == 0x7bff); // below the tie
  CHECK(float_to_half(65520.0f) == 0x7c00);  // the tie rounds to even: inf
  CHECK(float_to_half(1e10f) == 0x7c00);
  CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(float_to_half(1.0f + 0x1p-11f) == 0x3c00);            // tie, even stays
  CHECK(float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02);        // tie, odd rounds up
  CHECK(float_to_half(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01); // above the tie
  CHECK(float_to_half(0x1p-14f) == 0x0400);                   // smallest normal
  CHECK(float_to_half(0x1p-24f) == 0x0001);                   // smallest subnormal
  CHECK(float_to_half(0x1p-25f) == 0x0000);                   // tie with zero: even
  CHECK(float_to_half(1.5f * 0x1p-25f) == 0x0001);
  CHECK(float_to_half(3.0f * 0x1p-25f) == 0x0002);     // 1.5 ulp: tie to even 2
  CHECK(float_to_half(0x1p-14f - 0x1p-25f) == 0x0400); // rounds up into the normals
  const std::uint16_t nan = float_to_half(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7c00) == 0x7c00);
  CHECK((nan & 0x03ff) != 0);
  CHECK((float_to_half(from_bits(0x7f800001u)) & 0x03ff) != 0); // a signalling NaN stays NaN
}

TEST_CASE("half_to_float is exact and float_to_half inverts it on every pattern") {
  CHECK(half_to_float(0x3c00) == 1.0f);
  CHECK(half_to_float(0x0001) == 0x1p-24f);
  CHECK(half_to_float(0x03ff) == 1023 * 0x1p-24f);
  CHECK(half_to_float(0x7bff) == 65504.0f);
  CHECK(std::isinf(half_to_float(0x7c00)));
  CHECK(bits(half_to_float(0x8000)) == 0x80000000u);
  CHECK(std::isnan(half_to_float(0x7e00)));
  int mismatches = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) {
      mismatches += std::isnan(half_to_float(float_to_half(f))) ? 0 : 1;
      continue;
    }
    mismatches += float_to_half(f) == h ? 0 : 1;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("bf16 conversion rounds to nearest even, with inf, NaN and subnormals") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(float_to_bf16(0.1f) == 0x3dcd);
  CHECK(float_to_bf16(3.14159265f) == 0x4049);
  CHECK(float_to_bf16(from_bits(0x3f808000u)) == 0x3f80); // tie, even stays
  CHECK(float_to_bf16(from_bits(0x3f818000u)) == 0x3f82); // tie, odd rounds up
  CHECK(float_to_bf16(from_bits(0x3f808001u)) == 0x3f81);
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7f80); // rounds to inf
  CHECK(float_to_bf16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(float_to_bf16(from_bits(0x00018000u)) == 0x0002); // subnormal tie to even
  CHECK(float_to_bf16(from_bits(0x00008000u)) == 0x0000);
  const std::uint16_t nan = float_to_bf16(from_bits(0x7f800001u)); // signalling, low payload
  CHECK((nan & 0x7f80) == 0x7f80);
  CHECK((nan & 0x007f) != 0);
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(bf16_to_float(0x0001) == std::numeric_limits<float>::denorm_min() * 65536.0f);
  int mismatches = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_float(static_cast<std::uint16_t>(h));
    if (!std::isnan(f))
      mismatches += float_to_bf16(f) == h ? 0 : 1;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("pack rounds a double once (no double rounding through float)") {
  // 1 + 2^-11 + 2^-40 is above the fp16 tie; through float it would become the tie itself.
  const double v = 1.0 + 0x1p-11 + 0x1p-40;
  const auto bytes = pack({v}, dtype::fp16);
  std::uint16_t h;
  std::memcpy(&h, bytes.data(), 2);
  CHECK(h == 0x3c01);
  CHECK(round_to(v, dtype::fp16) == 1.0 + 0x1p-10);
  CHECK(round_to(1.0 + 0x1p-8 + 0x1p-40, dtype::bf16) == 1.0 + 0x1p-7);
  CHECK(round_to(0.1, dtype::fp32) == static_cast<double>(0.1f));
  for (const dtype t : {dtype::fp32, dtype::fp16, dtype::bf16}) {
    const std::vector<double> exact{1.0, -0.5, 0.25, 3.0, -1024.0};
    CHECK(unpack(pack(exact, t), t) == exact);
  }
  CHECK_THROWS_AS((void)unpack(std::vector<std::uint8_t>(3), dtype::fp32), prereg::error);
}

TEST_CASE("poison is a NaN that unpack keeps recognisable") {
  for (const dtype t : {dtype::fp32, dtype::fp16, dtype::bf16}) {
    const auto v = unpack(poison(3, t), t);
    REQUIRE(v.size() == 3);
    for (double d : v) {
      CHECK(std::isnan(d));
      CHECK(is_poison(d));
    }
  }
  CHECK_FALSE(is_poison(std::numeric_limits<double>::quiet_NaN()));
  CHECK_FALSE(is_poison(static_cast<double>(std::sqrt(-1.0f))));
  CHECK_FALSE(is_poison(1.0));
}

TEST_CASE("compare applies atol + rtol*|ref| per element") {
  SUBCASE("within tolerance") {
    const auto c = compare({1.0 + 1e-6, 2.0}, {1.0, 2.0}, 1e-5, 1e-5);
    CHECK(c.passed);
    CHECK_FALSE(c.unwritten);
    CHECK(c.first_bad == -1);
    CHECK(c.max_abs_error == doctest::Approx(1e-6));
    CHECK(c.max_rel_error == doctest::Approx(1e-6));
  }
  SUBCASE("outside tolerance names the first bad element") {
    const auto c = compare({1.0, 2.1, 3.5}, {1.0, 2.0, 3.0}, 1e-5, 1e-5);
    CHECK_FALSE(c.passed);
    CHECK(c.first_bad == 1);
    CHECK(c.max_abs_error == doctest::Approx(0.5));
    CHECK(c.max_rel_error == doctest::Approx(0.5 / 3.0));
  }
  SUBCASE("atol alone covers a zero reference") {
    CHECK(compare({1e-6}, {0.0}, 0, 1e-5).passed);
    CHECK_FALSE(compare({1e-4}, {0.0}, 1e-5, 1e-5).passed);
  }
  SUBCASE("poison is unwritten; a computed NaN fails without being unwritten") {
    auto out = unpack(poison(2, dtype::fp32), dtype::fp32);
    out[0] = 1.0;
    const auto c = compare(out, {1.0, 1.0}, 1e-5, 1e-5);
    CHECK_FALSE(c.passed);
    CHECK(c.unwritten);
    CHECK(c.first_bad == 1);
    const auto n = compare({std::numeric_limits<double>::quiet_NaN()}, {1.0}, 1, 1);
    CHECK_FALSE(n.passed);
    CHECK_FALSE(n.unwritten);
  }
  SUBCASE("sizes must match") {
    CHECK_THROWS_AS((void)compare({1.0}, {1.0, 2.0}, 0, 0), prereg::error);
  }
  SUBCASE("zeros or a constant never pass a varying reference, whatever atol") {
    const std::vector<double> ref{-1.5, 0.25, 1.75, -0.5};
    const auto z = compare({0.0, 0.0, 0.0, 0.0}, ref, 1e-5, 10.0);
    CHECK_FALSE(z.passed);
    CHECK(z.constant);
    CHECK(z.first_bad == 0);
    const auto k = compare({0.25, 0.25, 0.25, 0.25}, ref, 1e-5, 10.0);
    CHECK_FALSE(k.passed);
    CHECK(k.constant);
    CHECK(k.first_bad == 0); // the first element that differs from the reference
    // Zeros against a constant non-zero reference also fail; a constant reference is matched.
    CHECK(compare({0.0, 0.0}, {0.5, 0.5}, 1e-5, 10.0).constant);
    CHECK(compare({1.0, 1.0}, {1.0, 1.0}, 1e-5, 1e-5).passed);
    CHECK(compare({0.0, 0.0}, {0.0, 0.0}, 1e-5, 1e-5).passed);
    // A reference whose spread is within rtol of its scale counts as constant.
    CHECK(compare({2.0, 2.0}, {2.0, 2.0 + 1e-9}, 1e-5, 1e-5).passed);
    // NaN never matches, not even with huge tolerances.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK_FALSE(compare({1.0, nan}, {1.0, 2.0}, 1e9, 1e9).passed);
    CHECK_FALSE(compare({1.0, 2.0}, {1.0, nan}, 1e9, 1e9).passed);
  }
}

TEST_CASE("random_inputs: deterministic, in range, never zero, rounded to the dtype") {
  const auto a = random_inputs(4, 33, dtype::bf16, 99);
  const auto b = random_inputs(4, 33, dtype::bf16, 99);
  const auto c = random_inputs(4, 33, dtype::bf16, 100);
  CHECK(a.x == b.x);
  CHECK(a.dy == b.dy);
  CHECK(a.x != c.x);
  REQUIRE(a.x.size() == 4 * 33);
  REQUIRE(a.gamma.size() == 33);
  REQUIRE(a.beta.size() == 33);
  REQUIRE(a.dy.size() == 4 * 33);
  std::set<double> row_means;
  for (std::int64_t r = 0; r < 4; ++r) {
    double lo = 1e9, hi = -1e9, sum = 0;
    for (std::int64_t j = 0; j < 33; ++j) {
      const double v = a.x[r * 33 + j];
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    CHECK(lo >= -5.0);
    CHECK(hi <= 5.0);
    CHECK(hi - lo <= 4.0); // U(-2, 2) around the row's offset
    row_means.insert(sum);
  }
  CHECK(row_means.size() == 4);
  for (double v : a.x)
    CHECK((v != 0.0 && round_to(v, dtype::bf16) == v));
  for (double v : a.gamma)
    CHECK((v >= 0.5 && v <= 1.5));
  for (double v : a.beta)
    CHECK((v >= -0.5 && v <= 0.5 && v != 0.0));
  for (double v : a.dy)
    CHECK((v >= -1.0 && v <= 1.0 && v != 0.0));
  CHECK_THROWS_AS((void)random_inputs(0, 3, dtype::fp32, 1), prereg::error);
}

TEST_CASE("cell_seed separates cells and is deterministic") {
  std::set<std::uint64_t> seeds;
  for (const pass_kind p : {pass_kind::fwd, pass_kind::fwd_bwd})
    for (std::int64_t r : {1, 2, 64})
      for (std::int64_t c : {1, 2, 1024})
        seeds.insert(cell_seed(42, p, r, c));
  CHECK(seeds.size() == 18);
  CHECK(cell_seed(42, pass_kind::fwd, 3, 4) == cell_seed(42, pass_kind::fwd, 3, 4));
  CHECK(cell_seed(42, pass_kind::fwd, 3, 4) != cell_seed(43, pass_kind::fwd, 3, 4));
}

namespace {

/// Every tensor of op's float64 reference at (rows, cols, pass) with `threads` host threads.
host_tensors reference_with(int threads, const operation_desc &op, std::int64_t rows,
                            std::int64_t cols, pass_kind pass) {
  set_host_threads(threads);
  const shape s = op.shape_of(rows, cols);
  host_tensors t = random_tensors(op, s, dtype::bf16, 0x31u + static_cast<std::uint64_t>(rows));
  op.reference(op, s, pass, t);
  set_host_threads(0);
  return t;
}

bool same_bytes(const std::vector<double> &a, const std::vector<double> &b) {
  // An empty vector's data() may be null, which memcmp must not be given (UBSan).
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

} // namespace

TEST_CASE("the multi-core references give the single-threaded bytes") {
  // Rows past one chunk (chunk_for(cols) rows) so that several threads share the rows, and a
  // column count past one chunk of the column sums.
  for (const char *name : {"layernorm", "rmsnorm", "softmax"})
    for (const pass_kind pass : {pass_kind::fwd, pass_kind::fwd_bwd})
      for (const auto &[rows, cols] :
           {std::pair<std::int64_t, std::int64_t>{1, 7}, {1500, 333}, {37, 9000}}) {
        CAPTURE(name);
        CAPTURE(rows);
        CAPTURE(cols);
        const operation_desc &op = operation_named(name);
        const host_tensors one = reference_with(1, op, rows, cols, pass);
        for (const int threads : {2, 3, 8}) {
          const host_tensors many = reference_with(threads, op, rows, cols, pass);
          REQUIRE(many.size() == one.size());
          for (std::size_t i = 0; i < one.size(); ++i) {
            CAPTURE(op.tensors[i].name);
            CHECK(same_bytes(one[i], many[i]));
          }
        }
      }
}

TEST_CASE("compare, pack and unpack give the single-threaded result on many threads") {
  const operation_desc &op = operation_named("rmsnorm");
  const std::int64_t rows = 700, cols = 1000;
  host_tensors t = reference_with(1, op, rows, cols, pass_kind::fwd_bwd);
  const std::vector<double> &ref = t[static_cast<std::size_t>(op.index_of("dx"))];
  std::vector<double> out = ref;
  out[123456] += 1.0;  // a wrong element
  out[654321] += 1e-9; // within tolerance
  const auto poisoned = unpack(poison(1, dtype::bf16), dtype::bf16);
  out[600000] = poisoned[0]; // unwritten, after the first bad element
  std::vector<double> constant(ref.size(), 0.25);
  for (const int threads : {1, 2, 5}) {
    CAPTURE(threads);
    set_host_threads(threads);
    const comparison c = compare(out, ref, 1e-3, 1e-5);
    CHECK_FALSE(c.passed);
    CHECK(c.first_bad == 123456);
    CHECK(c.unwritten);
    CHECK(c.max_abs_error == doctest::Approx(1.0).epsilon(1e-3));
    const comparison k = compare(constant, ref, 1e-3, 10.0); // atol passes every element
    CHECK(k.constant);
    CHECK_FALSE(k.passed);
    const auto packed = pack(ref, dtype::bf16);
    set_host_threads(1);
    CHECK(packed == pack(ref, dtype::bf16));
    const auto unpacked1 = unpack(packed, dtype::bf16);
    set_host_threads(threads);
    CHECK(same_bytes(unpack(packed, dtype::bf16), unpacked1));
  }
  set_host_threads(0);
}
