// The roofs on the CUDA device (issue 47; docs/cuda.md, "the roofs"): the write-fill and
// read-sweep kernels of the read and write ceilings, cuBLASLt's GEMM ceiling loaded with dlopen,
// and the engine's instrument recording them. No timing assertions: presence, sanity (positive,
// finite), what the kernels leave in memory, and the records' shapes; the numbers are printed.
#include "device_helpers.hpp"

#include "device/cublas_ceiling.hpp"
#include "prereg/error.hpp"
#include "spec/roofs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace prereg;
using namespace prereg::device_test;

namespace {

/// `n` bytes of device memory at `p` + `offset`.
std::vector<std::uint8_t> bytes_at(device &dev, const void *p, std::size_t offset, std::size_t n) {
  std::vector<std::uint8_t> out(n);
  dev.download(out.data(), static_cast<const std::uint8_t *>(p) + offset, n);
  return out;
}

bool all_of_byte(const std::vector<std::uint8_t> &v, std::uint8_t b) {
  return std::all_of(v.begin(), v.end(), [&](std::uint8_t x) { return x == b; });
}

} // namespace

TEST_CASE("the write ceiling's kernel writes every byte; the read sweep writes none") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  const auto methods = dev->stream_roofs();
  REQUIRE(methods.has_value());
  CHECK(methods->read.find("read-sweep") != std::string::npos);
  CHECK(methods->write.find("write-fill") != std::string::npos);
  const std::size_t bytes = (std::size_t{96} << 20) + 16 * 1000; // not a multiple of a block
  void *p = dev->allocate(bytes);
  ok(cudaMemset(p, 0, bytes), "cudaMemset");
  dev->write_stream(p, bytes);
  dev->synchronize();
  for (const std::size_t at : {std::size_t{0}, bytes / 3, bytes - 4096})
    CHECK(all_of_byte(bytes_at(*dev, p, at, 4096), 0x5a));
  dev->read_stream(p, bytes);
  dev->synchronize();
  CHECK(all_of_byte(bytes_at(*dev, p, bytes - 4096, 4096), 0x5a));
  // Timed as the instrument times them: positive, finite.
  for (int i = 0; i < 3; ++i) {
    const double w = dev->timed([&] { dev->write_stream(p, bytes); }).ms;
    const double r = dev->timed([&] { dev->read_stream(p, bytes); }).ms;
    CHECK(w > 0);
    CHECK(r > 0);
    MESSAGE("write " << static_cast<double>(bytes) / (w * 1e6) << " GB/s, read "
                     << static_cast<double>(bytes) / (r * 1e6) << " GB/s");
  }
  dev->release(p);
}

TEST_CASE("cuBLASLt's GEMM ceiling: loaded with dlopen, per type, or why not") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  for (const char *type : {"bf16", "fp16", "fp32"}) {
    CAPTURE(type);
    std::string why;
    const auto step = dev->compute_ceiling(type, why);
    if (!step) {
      // A machine without libcublasLt.so.13 says so; nothing else may fail.
      CHECK(why.find("libcublasLt.so.13") != std::string::npos);
      MESSAGE("no GEMM ceiling: " << why);
      continue;
    }
    CHECK(step->method.find("cuBLASLt ") == 0);
    CHECK(step->method.find("libcublasLt.so.13") != std::string::npos);
    const std::uint64_t n = std::string(type) == "fp32" ? 4096 : 8192;
    CHECK(step->shape == fmt::format("m=n=k={}", n));
    CHECK(step->flops == 2 * n * n * n);
    for (int i = 0; i < 3; ++i) {
      const double ms = dev->timed([&] { step->run(); }).ms;
      CHECK(ms > 0);
      CHECK(std::isfinite(ms));
      MESSAGE(type << ": " << static_cast<double>(step->flops) / (ms * 1e9) << " TFLOP/s");
    }
  }
  std::string why;
  CHECK_FALSE(dev->compute_ceiling("fp8_e4m3", why));
  CHECK(why == "no cuBLASLt GEMM ceiling for fp8_e4m3 in this build (it has bf16, fp16, fp32)");
}

TEST_CASE("the instrument records the roofs of a bf16 plan: read, write and the bf16 GEMM") {
  const protocol p = make_protocol("layernorm", dtype::bf16, {512}, {1024},
                                   {{"fused", "layernorm.fused", launch_mode::stream, 1}}, 3, 1);
  const run_plan plan = make_plan(p, 0x700f);
  quiet_progress progress;
  const raw_run raw = measure_on_cuda(plan, progress);
  REQUIRE(raw.instrument.roofs.has_value());
  const roofs_record &r = *raw.instrument.roofs;
  for (const stream_roof *s : {&r.read, &r.write}) {
    CHECK(s->bytes == (std::uint64_t{1} << 30));
    CHECK(s->samples_ms.size() == 11);
    CHECK(s->gbps > 0);
    CHECK(std::isfinite(s->gbps));
    CHECK(s->gbps == stream_roof_gbps(*s));
  }
  // Only the type the cells compute in: bf16 (LayerNorm's inputs), fwd and fwd+bwd alike.
  REQUIRE(r.compute.size() == 1);
  const compute_roof &c = r.compute.at("bf16");
  if (c.unknown.empty()) {
    CHECK(c.samples_ms.size() == 9);
    CHECK(c.flops == 2ull * 8192 * 8192 * 8192);
    CHECK(c.tflops > 0);
    CHECK(std::isfinite(c.tflops));
  } else {
    CHECK(c.unknown.find("libcublasLt.so.13") != std::string::npos);
  }
  CHECK(roofs_problem(r).empty());
  MESSAGE("read " << r.read.gbps << " GB/s, write " << r.write.gbps << " GB/s, copy "
                  << raw.instrument.ceiling_gbps << " GB/s, bf16 "
                  << (c.unknown.empty() ? fmt::format("{} TFLOP/s", c.tflops) : c.unknown));
}
