// The CUDA device's checked calls (device/device_checks.hpp): its float64 references against
// the host's on random inputs, its comparison against reference::compare on planted faults,
// the checked inputs' fill and the input-mutation check.
#include "device_helpers.hpp"

#include "spec/operation.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

using namespace prereg;
using namespace prereg::device_test;

namespace {

dtype element_of(const operation_desc &op, std::size_t t, dtype type) {
  return op.tensors[t].type(type);
}

/// Device buffers of every tensor `pass` uses, the inputs uploaded from `host`.
struct device_tensors {
  device &dev;
  std::vector<void *> ptrs;
  device_tensors(device &d, const operation_desc &op, const shape &s, dtype type, pass_kind pass,
                 const host_tensors &host)
      : dev(d), ptrs(op.tensors.size(), nullptr) {
    for (std::size_t t = 0; t < op.tensors.size(); ++t) {
      if (!op.used_in(t, pass))
        continue;
      const dtype et = element_of(op, t, type);
      ptrs[t] = dev.allocate(op.elements(t, s) * element_bytes(et));
      if (op.tensors[t].role == tensor_role::input) {
        const auto bytes = reference::pack(host[t], et);
        dev.upload(ptrs[t], bytes.data(), bytes.size());
      }
    }
  }
  device_tensors(const device_tensors &) = delete;
  device_tensors &operator=(const device_tensors &) = delete;
  ~device_tensors() {
    for (void *p : ptrs)
      if (p != nullptr)
        dev.release(p);
  }
};

double max_abs(const std::vector<double> &v) {
  double m = 0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

} // namespace

TEST_CASE("the device's float64 references equal the host's on random inputs") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  device_checks *checks = dev->checks();
  REQUIRE(checks != nullptr);
  for (const char *name : {"layernorm", "rmsnorm", "softmax"})
    for (const dtype type : {dtype::fp32, dtype::fp16, dtype::bf16})
      for (const pass_kind pass : {pass_kind::fwd, pass_kind::fwd_bwd})
        for (const auto &[rows, cols] :
             {std::pair<std::int64_t, std::int64_t>{1, 7}, {3, 1000}, {1100, 896}, {64, 8192}}) {
          CAPTURE(name);
          CAPTURE(to_string(type));
          CAPTURE(rows);
          CAPTURE(cols);
          CAPTURE(pass == pass_kind::fwd ? "fwd" : "fwd+bwd");
          const operation_desc &op = operation_named(name);
          REQUIRE(checks->knows(op, type));
          const shape s = op.shape_of(rows, cols);
          host_tensors host = reference::random_tensors(op, s, type, 1234 + rows + cols);
          const device_tensors on(*dev, op, s, type, pass, host);
          op.reference(op, s, pass, host);
          auto ref = checks->reference(op, s, pass, type, on.ptrs);
          REQUIRE(ref != nullptr);
          for (std::size_t t = 0; t < op.tensors.size(); ++t) {
            if (op.tensors[t].role == tensor_role::input || !op.used_in(t, pass))
              continue;
            CAPTURE(op.tensors[t].name);
            const std::vector<double> got = ref->download(t);
            REQUIRE(got.size() == host[t].size());
            const double scale = std::max(max_abs(host[t]), 1e-300);
            double worst = 0;
            for (std::size_t i = 0; i < got.size(); ++i)
              worst = std::max(worst, std::fabs(got[i] - host[t][i]) / scale);
            CHECK(worst < 1e-11); // float64 both; only the order of the sums differs
          }
        }
}

TEST_CASE("the device's comparison finds what reference::compare finds") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  device_checks *checks = dev->checks();
  REQUIRE(checks != nullptr);
  const operation_desc &op = operation_named("rmsnorm");
  const dtype type = dtype::bf16;
  const shape s = op.shape_of(257, 896);
  host_tensors host = reference::random_tensors(op, s, type, 99);
  const device_tensors on(*dev, op, s, type, pass_kind::fwd_bwd, host);
  op.reference(op, s, pass_kind::fwd_bwd, host);
  auto ref = checks->reference(op, s, pass_kind::fwd_bwd, type, on.ptrs);
  REQUIRE(ref != nullptr);
  const auto dx = static_cast<std::size_t>(op.index_of("dx"));
  const double rtol = 2e-2, atol = 1e-3;
  // Outputs: the reference rounded to bf16 (passes), a wrong element, a poisoned element after
  // a wrong one, a constant, all zeros, all poison.
  std::vector<std::vector<double>> outputs;
  std::vector<double> exact(host[dx].size());
  for (std::size_t i = 0; i < exact.size(); ++i)
    exact[i] = reference::round_to(host[dx][i], type);
  outputs.push_back(exact);
  auto wrong = exact;
  wrong[1000] += 5.0;
  outputs.push_back(wrong);
  auto poisoned = wrong;
  poisoned[2000] = reference::unpack(reference::poison(1, type), type)[0];
  outputs.push_back(poisoned);
  outputs.emplace_back(exact.size(), 0.125);
  outputs.emplace_back(exact.size(), 0.0);
  outputs.push_back(reference::unpack(reference::poison(exact.size(), type), type));
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    CAPTURE(k);
    const auto bytes = reference::pack(outputs[k], type);
    dev->upload(on.ptrs[dx], bytes.data(), bytes.size());
    const std::vector<double> stored = reference::unpack(bytes, type); // what the device holds
    const reference::comparison want = reference::compare(stored, host[dx], rtol, atol);
    const device_comparison got = ref->compare(dx, on.ptrs[dx], type, rtol, atol);
    CHECK(got.result.passed == want.passed);
    CHECK(got.result.first_bad == want.first_bad);
    CHECK(got.result.unwritten == want.unwritten);
    CHECK(got.result.constant == want.constant);
    CHECK(got.result.max_abs_error == doctest::Approx(want.max_abs_error).epsilon(1e-9));
    CHECK(got.all_poison == (k == outputs.size() - 1));
    if (!want.passed) {
      const auto j = static_cast<std::size_t>(want.first_bad);
      CHECK((std::isnan(got.got) ? std::isnan(stored[j]) : got.got == stored[j]));
      CHECK(got.ref == doctest::Approx(host[dx][j]).epsilon(1e-12));
    }
  }
}

TEST_CASE("the checked fill: reproducible, never zero, in range, with per-row offsets") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  device_checks *checks = dev->checks();
  REQUIRE(checks != nullptr);
  const std::int64_t rows = 512, cols = 300;
  const std::size_t n = rows * cols;
  const input_distribution dist{-2.0, 2.0, 3.0};
  for (const dtype type : {dtype::fp32, dtype::fp16, dtype::bf16}) {
    CAPTURE(to_string(type));
    buffer a(n * element_bytes(type)), b(n * element_bytes(type));
    checks->fill_input(a.get(), n, type, dist, cols, 42);
    checks->fill_input(b.get(), n, type, dist, cols, 42);
    dev->synchronize();
    const auto va = a.download(n, type), vb = b.download(n, type);
    CHECK(va == vb);
    CHECK(std::none_of(va.begin(), va.end(), [](double v) { return v == 0.0; }));
    CHECK(std::all_of(va.begin(), va.end(), [](double v) { return v >= -5.01 && v <= 5.01; }));
    double lo = 1e9, hi = -1e9; // row means spread by the per-row offset
    for (std::int64_t r = 0; r < rows; ++r) {
      double m = 0;
      for (std::int64_t c = 0; c < cols; ++c)
        m += va[r * cols + c];
      m /= static_cast<double>(cols);
      lo = std::min(lo, m);
      hi = std::max(hi, m);
    }
    CHECK(hi - lo > 3.0);
    checks->fill_input(b.get(), n, type, dist, cols, 43);
    dev->synchronize();
    CHECK(b.download(n, type) != va);
    // The input-mutation check: one element changed.
    CHECK(checks->first_difference(a.get(), a.get(), n, element_bytes(type)) == -1);
    checks->fill_input(b.get(), n, type, dist, cols, 42);
    dev->synchronize();
    const std::vector<std::uint8_t> one = reference::pack({7.0}, type);
    dev->upload(static_cast<std::uint8_t *>(b.get()) + 12345 * element_bytes(type), one.data(),
                one.size());
    CHECK(checks->first_difference(a.get(), b.get(), n, element_bytes(type)) == 12345);
  }
}

TEST_CASE("the device's poison fill writes reference::poison's bytes") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  for (const dtype type : {dtype::fp32, dtype::fp16, dtype::bf16})
    for (const std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{1000003}}) {
      CAPTURE(to_string(type));
      CAPTURE(n);
      const auto want = reference::poison(n, type);
      buffer b(want.size() + 4);
      const std::vector<std::uint8_t> guard(want.size() + 4, 0x11);
      b.upload(guard);
      dev->fill_poison(b.get(), n, type);
      dev->synchronize();
      std::vector<std::uint8_t> got(want.size() + 4);
      ok(cudaMemcpy(got.data(), b.get(), got.size(), cudaMemcpyDeviceToHost), "download");
      CHECK(std::equal(want.begin(), want.end(), got.begin()));
      CHECK(std::all_of(got.begin() + static_cast<std::ptrdiff_t>(want.size()), got.end(),
                        [](std::uint8_t v) { return v == 0x11; })); // nothing past n
    }
}

TEST_CASE("an adopted float64 reference compares as the device's own") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  device_checks *checks = dev->checks();
  REQUIRE(checks != nullptr);
  const operation_desc &op = operation_named("rmsnorm");
  const dtype type = dtype::bf16;
  const shape s = op.shape_of(129, 896);
  host_tensors host = reference::random_tensors(op, s, type, 7);
  const device_tensors on(*dev, op, s, type, pass_kind::fwd_bwd, host);
  auto own = checks->reference(op, s, pass_kind::fwd_bwd, type, on.ptrs);
  REQUIRE(own != nullptr);
  // The same float64 values in buffers someone else owns (as torch's would be), adopted.
  auto owned = std::make_shared<std::vector<std::unique_ptr<buffer>>>();
  device_values values;
  values.at.assign(op.tensors.size(), nullptr);
  for (std::size_t t = 0; t < op.tensors.size(); ++t)
    if (op.tensors[t].role != tensor_role::input && op.used_in(t, pass_kind::fwd_bwd)) {
      const std::vector<double> v = own->download(t);
      owned->push_back(std::make_unique<buffer>(v.size() * sizeof(double)));
      ok(cudaMemcpy(owned->back()->get(), v.data(), v.size() * sizeof(double),
                    cudaMemcpyHostToDevice),
         "upload");
      values.at[t] = static_cast<const double *>(owned->back()->get());
    }
  values.owner = owned;
  auto adopted = checks->adopt(op, s, std::move(values));
  const auto dx = static_cast<std::size_t>(op.index_of("dx"));
  CHECK(adopted->download(dx) == own->download(dx));
  std::vector<double> out = adopted->download(dx);
  for (double &v : out)
    v = reference::round_to(v, type);
  out[500] += 3.0; // a planted wrong element
  const auto bytes = reference::pack(out, type);
  dev->upload(on.ptrs[dx], bytes.data(), bytes.size());
  const device_comparison a = adopted->compare(dx, on.ptrs[dx], type, 2e-2, 1e-3);
  const device_comparison b = own->compare(dx, on.ptrs[dx], type, 2e-2, 1e-3);
  CHECK_FALSE(a.result.passed);
  CHECK(a.result.first_bad == 500);
  CHECK(a.result.first_bad == b.result.first_bad);
  CHECK(a.result.max_abs_error == b.result.max_abs_error);
  CHECK(a.ref == b.ref);
}
