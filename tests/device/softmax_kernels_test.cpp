// The CUDA softmax arms x dtype x pass against a float64 reference written here, on adversarial
// shapes and rows (rows = 1, rows past a block's rows, large offsets, constant rows), with
// poisoned outputs; the fused arm's rows_per_block option; determinism; CUDA graph capture;
// and a timing table against the copy ceiling (skipped unless asked for).
#include "device_helpers.hpp"

#include "base/rng.hpp"
#include "cuda/softmax_arms.hpp"
#include "prereg/ops/softmax.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>

using namespace prereg;
using namespace prereg::device_test;

namespace {

struct arm_case {
  const char *name;
  const arm_entry *entry;
  bool allocates_fwd, allocates_bwd;
  std::int64_t max_cols;
  /// kernels/cuda/<arm>.arm's scratch bounds [bytes].
  std::size_t (*scratch_fwd)(std::size_t rows, std::size_t cols);
  std::size_t (*scratch_bwd)(std::size_t rows, std::size_t cols);
};

const arm_case arms[] = {
    {"softmax.unfused", &cuda::softmax_unfused_entry, true, true, 65536,
     [](std::size_t r, std::size_t c) { return 4 * r * c + 8 * r; },
     [](std::size_t r, std::size_t) { return 4 * r; }},
    {"softmax.fused", &cuda::softmax_fused_entry, false, false, 8192,
     [](std::size_t, std::size_t) -> std::size_t { return 0; },
     [](std::size_t, std::size_t) -> std::size_t { return 0; }},
};

enum class row_kind { random, large_offset, constant };

struct shape_case {
  std::int64_t rows, cols;
  bool adversarial; ///< row 0 large offset, row 1 constant, row 2 large offset, ...
};

// rows = 1; rows not a multiple of any rows per block (8, 4, 2); every threads-per-row class
// of the fused arm; more rows than one wave of blocks.
const std::vector<shape_case> shapes{
    {1, 8, false},   {1, 1024, true},     {1, 8192, false},  {37, 1024, true}, {13, 8192, true},
    {9, 896, true},  {7, 2048, false},    {5, 4096, true},   {3, 8, true},     {11, 136, false},
    {6, 1032, true}, {3001, 1024, false}, {2500, 896, true}, {3, 65536, true},
};

struct inputs {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> x, dy; ///< already rounded to the dtype
};

/// `v` rounded to `type`, with any element that rounds to zero replaced by 0.25 (inputs are
/// never zero).
std::vector<double> rounded_nonzero(const std::vector<double> &v, dtype type) {
  std::vector<double> out = reference::unpack(reference::pack(v, type), type);
  for (double &e : out)
    if (e == 0)
      e = 0.25;
  return out;
}

/// x ~ U(-2, 2), dy ~ U(-1, 1). Adversarial rows: offset + U(-w, w) with an offset whose exp
/// overflows fp32 (1e4, w 1 in fp32; 2000, w 8 in fp16; 2000, w 64 in bf16: a few steps of
/// the dtype), and constant rows.
inputs make_inputs(std::int64_t rows, std::int64_t cols, bool adversarial, dtype type,
                   std::uint64_t seed) {
  rng r(seed);
  inputs in{rows, cols, {}, {}};
  const auto n = static_cast<std::size_t>(rows * cols);
  in.x.resize(n);
  in.dy.resize(n);
  const double offset = type == dtype::fp32 ? 1e4 : 2000;
  const double width = type == dtype::fp32 ? 1 : type == dtype::fp16 ? 8 : 64;
  for (std::int64_t i = 0; i < rows; ++i) {
    const row_kind kind = !adversarial || i % 4 == 3 ? row_kind::random
                          : i % 2 == 0               ? row_kind::large_offset
                                                     : row_kind::constant;
    const double c = -3 + 6 * r.uniform();
    for (std::int64_t j = 0; j < cols; ++j) {
      const double u = 2 * r.uniform() - 1;
      in.x[static_cast<std::size_t>(i * cols + j)] = kind == row_kind::random ? 2 * u
                                                     : kind == row_kind::large_offset
                                                         ? offset + width * u
                                                         : c;
    }
  }
  for (double &v : in.dy)
    v = 2 * r.uniform() - 1;
  in.x = rounded_nonzero(in.x, type);
  in.dy = rounded_nonzero(in.dy, type);
  return in;
}

struct outputs {
  std::vector<double> y, dx;
};

/// The float64 reference (dx from the float64 y, as the operation's reference computes it).
outputs reference64(const inputs &in) {
  outputs out;
  out.y.resize(in.x.size());
  out.dx.resize(in.x.size());
  for (std::int64_t r = 0; r < in.rows; ++r) {
    const auto o = static_cast<std::size_t>(r * in.cols);
    const auto cols = static_cast<std::size_t>(in.cols);
    const double m = *std::max_element(in.x.begin() + o, in.x.begin() + o + cols);
    double sum = 0;
    for (std::size_t j = 0; j < cols; ++j)
      sum += out.y[o + j] = std::exp(in.x[o + j] - m);
    double dot = 0;
    for (std::size_t j = 0; j < cols; ++j) {
      out.y[o + j] /= sum;
      dot += in.dy[o + j] * out.y[o + j];
    }
    for (std::size_t j = 0; j < cols; ++j)
      out.dx[o + j] = out.y[o + j] * (in.dy[o + j] - dot);
  }
  return out;
}

struct run_result {
  outputs out;
  std::vector<double> dx_after_fwd; ///< must still be the poison
  std::vector<double> y_after_fwd;  ///< the backward must leave y as the forward wrote it
  std::size_t fwd_peak = 0, bwd_peak = 0;
};

/// Runs the arm on `in` with y and dx poisoned; `options` as the engine would pass them.
run_result run_arm(const arm_entry &arm, const inputs &in, dtype type, bool backward,
                   const std::vector<arm_option> &options = {}) {
  const auto n = static_cast<std::size_t>(in.rows * in.cols);
  const std::size_t e = element_bytes(type);
  buffer x(n * e), y(n * e), dy(n * e), dx(n * e);
  x.upload(reference::pack(in.x, type));
  dy.upload(reference::pack(in.dy, type));
  y.upload(reference::poison(n, type));
  dx.upload(reference::poison(n, type));
  void *data[4] = {x.get(), y.get(), dy.get(), dx.get()};
  tensor_args t;
  t.data = data;
  t.count = 4;
  t.rows = in.rows;
  t.cols = in.cols;
  t.type = type;
  t.options = options.data();
  t.option_count = options.size();
  run_result res;
  {
    counting_allocator alloc;
    arm.forward(t, alloc, nullptr);
    ok(cudaDeviceSynchronize(), "forward");
    CHECK(alloc.current() == 0);
    res.fwd_peak = alloc.peak();
  }
  res.out.y = y.download(n, type);
  res.dx_after_fwd = dx.download(n, type);
  if (backward) {
    counting_allocator alloc;
    arm.backward(t, alloc, nullptr);
    ok(cudaDeviceSynchronize(), "backward");
    CHECK(alloc.current() == 0);
    res.bwd_peak = alloc.peak();
    res.out.dx = dx.download(n, type);
    res.y_after_fwd = res.out.y;
    res.out.y = y.download(n, type);
  }
  CHECK(x.download(n, type) == in.x);
  CHECK(dy.download(n, type) == in.dy);
  return res;
}

/// Checks one output against its reference with the project's rule and names the first bad
/// element.
void expect_close(const char *name, const std::vector<double> &got, const std::vector<double> &ref,
                  const correctness_spec &tol, std::int64_t cols) {
  const reference::comparison cmp = reference::compare(got, ref, tol.rtol, tol.atol);
  std::string where = "-";
  if (cmp.first_bad >= 0) {
    const auto i = static_cast<std::size_t>(cmp.first_bad);
    where = fmt::format("element {} (row {}, col {}): got {}, expected {}", i, cmp.first_bad / cols,
                        cmp.first_bad % cols, got[i], ref[i]);
  }
  INFO(name, ": max_abs ", cmp.max_abs_error, " max_rel ", cmp.max_rel_error, " first bad ", where);
  CHECK_FALSE(cmp.unwritten);
  CHECK(cmp.passed);
}

/// fp32 y element by element relative to itself (y > 0; the max subtraction keeps it exact).
void expect_relative(const std::vector<double> &got, const std::vector<double> &ref, double rtol,
                     std::int64_t cols) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - ref[i]) <= rtol * ref[i])) {
      FAIL_CHECK(fmt::format("y element {} (row {}, col {}): got {}, expected {}", i,
                             static_cast<std::int64_t>(i) / cols,
                             static_cast<std::int64_t>(i) % cols, got[i], ref[i]));
      return;
    }
  }
}

bool bitwise_equal(const std::vector<double> &a, const std::vector<double> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

/// A step_allocator on one stream, usable inside a capture (cudaMallocAsync nodes).
class stream_allocator final : public step_allocator {
public:
  explicit stream_allocator(cudaStream_t s) : m_stream(s) {}
  void *allocate(std::size_t bytes) override {
    void *p = nullptr;
    ok(cudaMallocAsync(&p, bytes ? bytes : 1, m_stream), "cudaMallocAsync");
    ++held;
    return p;
  }
  void release(void *p) override {
    --held;
    ok(cudaFreeAsync(p, m_stream), "cudaFreeAsync");
  }
  int held = 0;

private:
  cudaStream_t m_stream;
};

} // namespace

TEST_CASE("every CUDA softmax arm matches the float64 reference on adversarial shapes") {
  std::uint64_t seed = 0x50f7;
  for (const arm_case &arm : arms) {
    for (const dtype type : {dtype::fp32, dtype::fp16, dtype::bf16}) {
      const correctness_spec tol = default_tolerance(type);
      for (const bool bwd : {false, true}) {
        for (const shape_case &s : shapes) {
          if (s.cols > arm.max_cols)
            continue;
          CAPTURE(arm.name);
          CAPTURE(to_string(type));
          CAPTURE(bwd);
          CAPTURE(s.rows);
          CAPTURE(s.cols);
          const inputs in = make_inputs(s.rows, s.cols, s.adversarial, type, ++seed);
          const outputs ref = reference64(in);
          const run_result got = run_arm(*arm.entry, in, type, bwd);
          expect_close("y", got.out.y, ref.y, tol, s.cols);
          if (type == dtype::fp32)
            expect_relative(got.out.y, ref.y, 2e-5, s.cols);
          CHECK(std::all_of(got.dx_after_fwd.begin(), got.dx_after_fwd.end(),
                            [](double v) { return reference::is_poison(v); }));
          if (bwd) {
            expect_close("dx", got.out.dx, ref.dx, tol, s.cols);
            CHECK(bitwise_equal(got.out.y, got.y_after_fwd));
          }
          const auto r = static_cast<std::size_t>(s.rows), c = static_cast<std::size_t>(s.cols);
          CHECK((got.fwd_peak > 0) == arm.allocates_fwd);
          CHECK(got.fwd_peak <= arm.scratch_fwd(r, c));
          if (bwd) {
            CHECK((got.bwd_peak > 0) == arm.allocates_bwd);
            CHECK(got.bwd_peak <= arm.scratch_bwd(r, c));
          }
        }
      }
    }
  }
}

TEST_CASE("the CUDA softmax arms are deterministic, forward and backward") {
  for (const arm_case &arm : arms) {
    for (const dtype type : {dtype::fp32, dtype::bf16}) {
      CAPTURE(arm.name);
      CAPTURE(to_string(type));
      const inputs in = make_inputs(4099, 1024, true, type, 77);
      const run_result a = run_arm(*arm.entry, in, type, true);
      const run_result b = run_arm(*arm.entry, in, type, true);
      CHECK(bitwise_equal(a.out.y, b.out.y));
      CHECK(bitwise_equal(a.out.dx, b.out.dx));
    }
  }
}

TEST_CASE("softmax.fused: rows_per_block changes the blocks, never the results") {
  for (const std::int64_t cols : {std::int64_t{1024}, std::int64_t{8192}}) {
    const inputs in = make_inputs(1001, cols, true, dtype::fp32, 5 + cols);
    const run_result automatic = run_arm(cuda::softmax_fused_entry, in, dtype::fp32, true);
    const outputs ref = reference64(in);
    expect_close("y", automatic.out.y, ref.y, default_tolerance(dtype::fp32), cols);
    for (const double rpb : {0.0, 1.0, 3.0, 8.0, 16.0, 1024.0}) { // 1024: clamped to 512 threads
      CAPTURE(cols);
      CAPTURE(rpb);
      const run_result got = run_arm(cuda::softmax_fused_entry, in, dtype::fp32, true,
                                     {arm_option{"rows_per_block", rpb}});
      CHECK(bitwise_equal(got.out.y, automatic.out.y));
      CHECK(bitwise_equal(got.out.dx, automatic.out.dx));
    }
  }
  const inputs in = make_inputs(4, 64, false, dtype::fp32, 3);
  for (const double bad : {-1.0, 2.5, 1025.0}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(run_arm(cuda::softmax_fused_entry, in, dtype::fp32, false,
                            {arm_option{"rows_per_block", bad}}),
                    error);
  }
}

TEST_CASE("the CUDA softmax arms refuse shapes and buffers they cannot serve") {
  buffer a(64 * 4), b(64 * 4);
  for (const arm_case &arm : arms) {
    CAPTURE(arm.name);
    counting_allocator alloc;
    void *data[4] = {a.get(), b.get(), a.get(), b.get()};
    tensor_args t;
    t.data = data;
    t.count = 4;
    t.rows = 2;
    t.cols = 12; // not a multiple of 8
    CHECK_THROWS_AS(arm.entry->forward(t, alloc, nullptr), error);
    t.cols = arm.max_cols + 8;
    CHECK_THROWS_AS(arm.entry->forward(t, alloc, nullptr), error);
    t.cols = 8;
    data[softmax::y] = static_cast<char *>(b.get()) + 4; // not 16-byte aligned
    CHECK_THROWS_AS(arm.entry->forward(t, alloc, nullptr), error);
    data[softmax::y] = b.get();
    data[softmax::dx] = nullptr;
    CHECK_THROWS_AS(arm.entry->backward(t, alloc, nullptr), error);
    CHECK(alloc.current() == 0);
  }
}

TEST_CASE("the CUDA softmax arms run inside a captured CUDA graph") {
  const std::int64_t rows = 513, cols = 1024;
  const auto n = static_cast<std::size_t>(rows * cols);
  const inputs in = make_inputs(rows, cols, true, dtype::fp32, 99);
  const outputs ref = reference64(in);
  for (const arm_case &arm : arms) {
    CAPTURE(arm.name);
    (void)run_arm(*arm.entry, in, dtype::fp32, true); // first calls outside the capture
    buffer x(n * 4), y(n * 4), dy(n * 4), dx(n * 4);
    x.upload(reference::pack(in.x, dtype::fp32));
    dy.upload(reference::pack(in.dy, dtype::fp32));
    y.upload(reference::poison(n, dtype::fp32));
    dx.upload(reference::poison(n, dtype::fp32));
    void *data[4] = {x.get(), y.get(), dy.get(), dx.get()};
    tensor_args t;
    t.data = data;
    t.count = 4;
    t.rows = rows;
    t.cols = cols;
    cudaStream_t s = nullptr;
    ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    stream_allocator alloc(s);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture");
    arm.entry->forward(t, alloc, s);
    arm.entry->backward(t, alloc, s);
    ok(cudaStreamEndCapture(s, &graph), "end capture");
    CHECK(alloc.held == 0);
    ok(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    ok(cudaGraphLaunch(exec, s), "launch");
    ok(cudaGraphLaunch(exec, s), "launch again");
    ok(cudaStreamSynchronize(s), "sync");
    expect_close("y", y.download(n, dtype::fp32), ref.y, default_tolerance(dtype::fp32), cols);
    expect_close("dx", dx.download(n, dtype::fp32), ref.dx, default_tolerance(dtype::fp32), cols);
    ok(cudaGraphExecDestroy(exec), "destroy exec");
    ok(cudaGraphDestroy(graph), "destroy graph");
    ok(cudaStreamDestroy(s), "destroy stream");
  }
}

namespace {

/// Median of `reps` timed calls of `f` on the default stream (CUDA events) [ms], after 3
/// untimed ones. Tensors here are several times the L2, so no flush is needed between calls.
template <class F> double median_ms(F f, int reps = 20) {
  for (int i = 0; i < 3; ++i)
    f();
  cudaEvent_t a = nullptr, b = nullptr;
  ok(cudaEventCreate(&a), "event");
  ok(cudaEventCreate(&b), "event");
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    ok(cudaEventRecord(a, nullptr), "record");
    f();
    ok(cudaEventRecord(b, nullptr), "record");
    ok(cudaEventSynchronize(b), "sync");
    float t = 0;
    ok(cudaEventElapsedTime(&t, a, b), "elapsed");
    ms.push_back(t);
  }
  ok(cudaEventDestroy(a), "event");
  ok(cudaEventDestroy(b), "event");
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

} // namespace

// Skipped unless asked for: prereg_device_tests --no-skip -tc='bench: softmax*'. Prints the
// median time and % of a device-to-device copy's bandwidth (bytes read + written) with the
// bytes model x + y (fwd) and x + y + y + dy + dx (fwd+bwd). No timing assertions.
TEST_CASE("bench: softmax arms against the copy ceiling" * doctest::skip()) {
  struct bench_shape {
    dtype type;
    std::int64_t rows, cols;
  };
  const bench_shape bench_shapes[] = {{dtype::fp32, 65536, 1024},
                                      {dtype::fp16, 65536, 896},
                                      {dtype::bf16, 4096, 8192},
                                      {dtype::fp32, 16384, 8192}};
  const std::size_t copy_bytes = std::size_t{1} << 30;
  buffer src(copy_bytes), dst(copy_bytes);
  ok(cudaMemset(src.get(), 1, copy_bytes), "memset");
  const double copy_ms = median_ms([&] {
    ok(cudaMemcpyAsync(dst.get(), src.get(), copy_bytes, cudaMemcpyDeviceToDevice, nullptr),
       "copy");
  });
  const double ceiling = 2.0 * static_cast<double>(copy_bytes) / (copy_ms * 1e6); // [GB/s]
  std::printf("\ncopy ceiling %.0f GB/s (1 GiB device-to-device, read + written)\n", ceiling);
  std::printf("%-16s %-5s %-12s %-8s %5s %10s %8s %7s\n", "arm", "dtype", "shape", "pass", "rpb",
              "median_ms", "GB/s", "%ceil");
  for (const bench_shape &s : bench_shapes) {
    const auto n = static_cast<std::size_t>(s.rows * s.cols);
    const std::size_t bytes = n * element_bytes(s.type);
    buffer x(bytes), y(bytes), dy(bytes), dx(bytes);
    ok(cudaMemset(x.get(), 0x3c, bytes), "memset"); // finite values in every dtype
    ok(cudaMemset(dy.get(), 0x3c, bytes), "memset");
    void *data[4] = {x.get(), y.get(), dy.get(), dx.get()};
    for (const arm_case &arm : arms) {
      for (const double rpb : {0.0, 2.0, 4.0, 16.0}) {
        if (rpb != 0 && arm.entry != &cuda::softmax_fused_entry)
          continue;
        const std::vector<arm_option> options{arm_option{"rows_per_block", rpb}};
        tensor_args t;
        t.data = data;
        t.count = 4;
        t.rows = s.rows;
        t.cols = s.cols;
        t.type = s.type;
        t.options = options.data();
        t.option_count = options.size();
        counting_allocator alloc;
        const double fwd = median_ms([&] { arm.entry->forward(t, alloc, nullptr); });
        const double both = median_ms([&] {
          arm.entry->forward(t, alloc, nullptr);
          arm.entry->backward(t, alloc, nullptr);
        });
        CHECK(alloc.current() == 0);
        const std::string shape = fmt::format("{}x{}", s.rows, s.cols);
        for (const auto &[pass, ms, tensors] :
             {std::tuple{"fwd", fwd, 2.0}, std::tuple{"fwd+bwd", both, 5.0}}) {
          const double gbps = tensors * static_cast<double>(bytes) / (ms * 1e6);
          std::printf("%-16s %-5s %-12s %-8s %5.0f %10.4f %8.0f %6.1f%%\n", arm.name,
                      std::string(to_string(s.type)).c_str(), shape.c_str(), pass, rpb, ms, gbps,
                      100.0 * gbps / ceiling);
        }
      }
    }
  }
}
