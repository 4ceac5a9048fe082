// GPU tests of the element types beyond fp32/fp16/bf16 on a CUDA device (docs/operations.md,
// "Element types"; tools/device/plans/types.plan): the typed fill of timed windows and checked
// calls, the poison fill, the comparison kernels (exact integers, unwritten poison, fp8 by
// tolerance, a 0-dim output) and the input check of 1-byte elements, against the host's rules.
#include "device_helpers.hpp"

#include "spec/operation_file.hpp"

#include <algorithm>
#include <cmath>

using namespace prereg;
using namespace prereg::device_test;

namespace {

constexpr dtype typed_types[] = {dtype::fp8_e4m3, dtype::fp8_e5m2, dtype::int8,   dtype::uint8,
                                 dtype::int32,    dtype::int64,    dtype::boolean};

/// The range each type is filled in: integers [lo, hi), fp8 [lo, hi].
input_distribution range_of(dtype t) {
  input_distribution d;
  if (t == dtype::boolean) {
    d.lo = 0, d.hi = 2;
  } else if (t == dtype::uint8) {
    d.lo = 3, d.hi = 200;
  } else if (t == dtype::int64) {
    d.lo = -5, d.hi = 151936;
  } else if (is_integral(t)) {
    d.lo = -100, d.hi = 100;
  } else {
    d.lo = -0.3, d.hi = 0.34; // e4m3: 0.34 rounds to 0.34375, outside: kept in
  }
  return d;
}

/// An operation with one output of type `t` and dims [n] (or [] when n == 0) whose float64
/// reference lives on the device.
json one_output(dtype t, bool zero_dim) {
  json d = json::parse(R"({"name": "typed_out", "axes": ["n"],
    "tensors": [{"name": "x", "role": "input", "dims": ["n"], "passes": ["fwd"],
                 "dist": {"lo": -1, "hi": 1}},
                {"name": "y", "role": "output", "dims": ["n"], "passes": ["fwd"]}],
    "passes": {"fwd": {}}, "tolerance": {"fp8_e4m3": {"rtol": 0.1, "atol": 0},
                                         "fp8_e5m2": {"rtol": 0.1, "atol": 0}},
    "reference": "r"})");
  d["tensors"][1]["element"] = std::string(to_string(t));
  if (zero_dim)
    d["tensors"][1]["dims"] = json::array();
  return d;
}

} // namespace

TEST_CASE("typed fills: every fp8, integer and bool type inside its range, reproducible") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  device_checks *checks = dev->checks();
  REQUIRE(checks != nullptr);
  const std::size_t n = 100003;
  for (const dtype t : typed_types) {
    CAPTURE(to_string(t));
    const input_distribution d = range_of(t);
    buffer a(n * element_bytes(t)), b(n * element_bytes(t)), c(n * element_bytes(t));
    checks->fill_input(a.get(), n, t, d, 0, 42);
    checks->fill_input(b.get(), n, t, d, 0, 42);
    dev->fill_uniform(c.get(), n, t, d.lo, d.hi, 42, 0, 0);
    dev->synchronize();
    const auto va = a.download(n, t);
    CHECK(va == b.download(n, t));
    CHECK(va == c.download(n, t)); // the timed windows' fill follows the same rule
    if (is_integral(t)) {
      CHECK(std::all_of(va.begin(), va.end(),
                        [&](double v) { return v >= d.lo && v < d.hi && v == std::floor(v); }));
      if (d.hi - d.lo <= 256) { // a small range is drawn whole (100003 draws)
        CHECK(*std::min_element(va.begin(), va.end()) == d.lo);
        CHECK(*std::max_element(va.begin(), va.end()) == d.hi - 1);
      }
    } else {
      CHECK(std::all_of(va.begin(), va.end(), [&](double v) {
        return v != 0 && v >= d.lo && v <= d.hi && reference::round_to(v, t) == v;
      }));
    }
    checks->fill_input(b.get(), n, t, d, 0, 43);
    dev->synchronize();
    CHECK(b.download(n, t) != va);
  }
}

TEST_CASE("typed poison: the device writes reference::poison's bytes, nothing past n") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  for (const dtype t : typed_types)
    for (const std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{1000003}}) {
      CAPTURE(to_string(t));
      CAPTURE(n);
      const auto want = reference::poison(n, t);
      buffer b(want.size() + 8);
      b.upload(std::vector<std::uint8_t>(want.size() + 8, 0x11));
      dev->fill_poison(b.get(), n, t);
      dev->synchronize();
      std::vector<std::uint8_t> got(want.size() + 8);
      ok(cudaMemcpy(got.data(), b.get(), got.size(), cudaMemcpyDeviceToHost), "download");
      CHECK(std::equal(want.begin(), want.end(), got.begin()));
      CHECK(std::all_of(got.begin() + static_cast<std::ptrdiff_t>(want.size()), got.end(),
                        [](std::uint8_t v) { return v == 0x11; }));
    }
}

TEST_CASE("typed compare on the device: exact integers, unwritten poison, fp8 by tolerance") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  device_checks *checks = dev->checks();
  REQUIRE(checks != nullptr);
  for (const dtype t : typed_types)
    for (const bool zero_dim : {false, true}) {
      CAPTURE(to_string(t));
      CAPTURE(zero_dim);
      const operation_desc op = operation_from_json(one_output(t, zero_dim), "", "test");
      const std::size_t n = zero_dim ? 1 : 4099;
      shape s;
      s.extents = {static_cast<std::int64_t>(n)};
      std::vector<double> ref(n);
      for (std::size_t i = 0; i < n; ++i)
        ref[i] = t == dtype::boolean ? static_cast<double>(i % 2)
                 : is_fp8(t)         ? reference::round_to(std::ldexp(1.0 + i % 7, -2), t)
                                     : static_cast<double>(static_cast<int>(i % 97) - 40);
      if (t == dtype::uint8)
        for (double &v : ref)
          v = std::fabs(v);
      auto values = std::make_shared<buffer>(n * sizeof(double));
      ok(cudaMemcpy(values->get(), ref.data(), n * sizeof(double), cudaMemcpyHostToDevice), "up");
      device_values dv;
      dv.at = {nullptr, static_cast<const double *>(values->get())};
      dv.owner = values;
      const auto r = checks->adopt(op, s, dv);
      const op_tolerance tol = op.tolerance_of(1, op_tolerance{dtype::fp32, 1e-5, 1e-5}, t);
      buffer out(n * element_bytes(t));
      out.upload(reference::pack(ref, t));
      CHECK(r->compare(1, out.get(), t, tol.rtol, tol.atol).result.passed); // exact copy
      std::vector<double> wrong = ref;
      wrong[n - 1] = t == dtype::boolean ? 1.0 - ref[n - 1]
                     : is_fp8(t)         ? -ref[n - 1]
                                         : ref[n - 1] + 1;
      out.upload(reference::pack(wrong, t));
      const device_comparison w = r->compare(1, out.get(), t, tol.rtol, tol.atol);
      CHECK_FALSE(w.result.passed);
      CHECK(w.result.first_bad == static_cast<std::int64_t>(n - 1));
      CHECK(w.got == wrong[n - 1]);
      dev->fill_poison(out.get(), n, t);
      dev->synchronize();
      const device_comparison u = r->compare(1, out.get(), t, tol.rtol, tol.atol);
      CHECK_FALSE(u.result.passed);
      CHECK(u.result.unwritten);
      CHECK(u.all_poison);
      CHECK(reference::is_poison(u.got)); // read back as the host reads an unwritten element
    }
}

TEST_CASE("typed input check: the first changed 1-byte and 8-byte element") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  device_checks *checks = dev->checks();
  REQUIRE(checks != nullptr);
  for (const dtype t : {dtype::int8, dtype::int64}) {
    CAPTURE(to_string(t));
    const std::size_t n = 70001;
    buffer a(n * element_bytes(t)), b(n * element_bytes(t));
    checks->fill_input(a.get(), n, t, range_of(t), 0, 5);
    checks->fill_input(b.get(), n, t, range_of(t), 0, 5);
    dev->synchronize();
    CHECK(checks->first_difference(a.get(), b.get(), n, element_bytes(t)) == -1);
    const auto seven = reference::pack({7.0}, t);
    const auto eight = reference::pack({8.0}, t);
    dev->upload(static_cast<std::uint8_t *>(a.get()) + 54321 * element_bytes(t), seven.data(),
                seven.size());
    dev->upload(static_cast<std::uint8_t *>(b.get()) + 54321 * element_bytes(t), eight.data(),
                eight.size());
    CHECK(checks->first_difference(a.get(), b.get(), n, element_bytes(t)) == 54321);
  }
}
