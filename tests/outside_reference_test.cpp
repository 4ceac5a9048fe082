// Tests of an operation file's reference on the device path (docs/engine.md, "What is computed
// where"): the engine hands its device reference the checked inputs where they lie, adopts the
// float64 outputs it leaves on the device and compares there; the gate and the spot checks
// still catch wrong, cached and input-mutating arms; a failing reference fails every cell of its
// shape without a second try on the host. Also the poison fill of every device.
#include "checks_device.hpp"
#include "device/device.hpp"
#include "engine/measure.hpp"
#include "prereg/error.hpp"
#include "spec/arm_code.hpp"
#include "spec/operation_file.hpp"
#include "spec/reference.hpp"
#include "spec/registry.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

using namespace prereg;

namespace {

class quiet_progress final : public progress_sink {
public:
  void phase(std::string_view) override {}
  void cell_done(std::size_t, std::size_t) override {}
};

/// LayerNorm declared as an operation file ("lnfile"), with the built-in float64 reference on
/// the host and a "device" reference that computes it into memory it owns (this test device's
/// memory is the host's), counting its calls.
int g_device_calls = 0, g_host_calls = 0;
bool g_fail = false, g_unavailable = false;

void host_reference(const operation_desc &op, const shape &s, pass_kind pass, host_tensors &t) {
  ++g_host_calls;
  const operation_desc &ln = operation_named("layernorm"); // its reference reads op.name
  ln.reference(ln, s, pass, t);
}

device_values device_reference(const operation_desc &op, const shape &s, pass_kind pass,
                               const std::vector<device_input> &in, int) {
  ++g_device_calls;
  if (g_unavailable) // as the glue answers without torch on CUDA
    return {};
  if (g_fail)
    throw invalid_input("operation lnfile: the reference at fwd 8x64 raised ValueError: planted",
                        op.file);
  // This test device's memory is the host's: the inputs are read where the engine says they lie,
  // in their element types, as the glue reads them on CUDA.
  auto t = std::make_shared<host_tensors>(op.tensors.size());
  for (std::size_t i = 0; i < op.tensors.size(); ++i) {
    if (op.tensors[i].role != tensor_role::input || !op.used_in(i, pass)) {
      CHECK(in.at(i).at == nullptr);
      continue;
    }
    REQUIRE(in.at(i).at != nullptr);
    const auto n = static_cast<std::size_t>(op.elements(i, s)) * element_bytes(in[i].type);
    const auto *b = static_cast<const std::uint8_t *>(in[i].at);
    (*t)[i] = reference::unpack(std::vector<std::uint8_t>(b, b + n), in[i].type);
  }
  for (std::size_t i = 0; i < op.tensors.size(); ++i)
    if (op.tensors[i].role != tensor_role::input && op.used_in(i, pass))
      (*t)[i].assign(static_cast<std::size_t>(op.elements(i, s)), 0.0);
  const operation_desc &ln = operation_named("layernorm");
  ln.reference(ln, s, pass, *t);
  device_values v;
  v.at.assign(op.tensors.size(), nullptr);
  for (std::size_t i = 0; i < op.tensors.size(); ++i)
    if (op.tensors[i].role != tensor_role::input && op.used_in(i, pass))
      v.at[i] = (*t)[i].data();
  v.owner = t;
  return v;
}

const operation_desc &lnfile() {
  json d = operation_to_json(operation_named("layernorm"));
  d["name"] = "lnfile";
  d["reference"] = "reference";
  const operation_desc &op = register_outside_operation(operation_from_json(d, "ln.py", "ln.py"));
  set_outside_reference("lnfile", host_reference);
  set_outside_device_reference("lnfile", device_reference);
  return op;
}

const arm_ops &fused_ops() { return *builtin_arm_code(*find_arm("cpu", "layernorm.fused")).norm; }

// Planted arms: y = x; a cache by input pointer; a scribble on x after a right answer.
void wrong_forward(const norm_tensors &t, step_allocator &, void *) {
  std::memcpy(t.y, t.x, static_cast<std::size_t>(t.rows * t.cols) * 4);
  for (std::int64_t r = 0; r < t.rows; ++r)
    t.mean[r] = t.rstd[r] = 0;
}
std::map<const void *, std::vector<float>> g_cache;
void caching_forward(const norm_tensors &t, step_allocator &a, void *s) {
  const auto n = static_cast<std::size_t>(t.rows * t.cols + 2 * t.rows);
  auto *y = static_cast<float *>(t.y);
  if (const auto it = g_cache.find(t.x); it != g_cache.end()) {
    std::memcpy(y, it->second.data(), static_cast<std::size_t>(t.rows * t.cols) * 4);
    std::memcpy(t.mean, it->second.data() + t.rows * t.cols, static_cast<std::size_t>(t.rows) * 4);
    std::memcpy(t.rstd, it->second.data() + t.rows * t.cols + t.rows,
                static_cast<std::size_t>(t.rows) * 4);
    return;
  }
  fused_ops().forward(t, a, s);
  std::vector<float> keep(n);
  std::memcpy(keep.data(), y, static_cast<std::size_t>(t.rows * t.cols) * 4);
  std::memcpy(keep.data() + t.rows * t.cols, t.mean, static_cast<std::size_t>(t.rows) * 4);
  std::memcpy(keep.data() + t.rows * t.cols + t.rows, t.rstd, static_cast<std::size_t>(t.rows) * 4);
  g_cache[t.x] = std::move(keep);
}
void mutating_forward(const norm_tensors &t, step_allocator &a, void *s) {
  fused_ops().forward(t, a, s);
  static_cast<float *>(const_cast<void *>(t.x))[1] += 1.0f;
}
const arm_ops wrong_ops{&wrong_forward, nullptr};
const arm_ops caching_ops{&caching_forward, nullptr};
const arm_ops mutating_ops{&mutating_forward, nullptr};

arm_code planted(const arm_spec &a, const arm_info &info) {
  if (a.id == "wrong")
    return {&wrong_ops, nullptr};
  if (a.id == "caches")
    return {&caching_ops, nullptr};
  if (a.id == "mutates")
    return {&mutating_ops, nullptr};
  return builtin_arm_code(info);
}

protocol file_protocol() {
  protocol p;
  p.id = "outside_reference_test";
  p.title = "t";
  p.hypothesis = "h";
  p.device = "cpu";
  p.op = lnfile().name;
  p.type = dtype::fp32;
  p.rows = {8};
  p.cols = {64};
  p.passes = {pass_kind::fwd};
  p.arms = {{"honest", "layernorm.fused", launch_mode::stream, 1},
            {"wrong", "layernorm.fused", launch_mode::stream, 1},
            {"caches", "layernorm.fused", launch_mode::stream, 1},
            {"mutates", "layernorm.fused", launch_mode::stream, 1}};
  p.measurement.repetitions = 6;
  p.measurement.warmup = 1;
  p.measurement.order = order_mode::interleaved;
  p.correctness = {1e-5, 1e-5};
  return p;
}

run_plan plan_of(const protocol &p) {
  run_plan plan{&p, {}, 17};
  for (const auto &a : p.arms)
    plan.cells.push_back({a.id, pass_kind::fwd, 8, 64});
  return plan;
}

const correctness_record &record_of(const raw_run &raw, std::string_view arm) {
  for (const auto &c : raw.correctness)
    if (c.key.arm == arm)
      return c;
  FAIL("no correctness record");
  throw std::logic_error("unreachable");
}

} // namespace

TEST_CASE("an operation file's device reference: compared on the device, planted faults caught") {
  g_device_calls = g_host_calls = 0;
  g_fail = false;
  g_cache.clear();
  const protocol p = file_protocol();
  quiet_progress progress;
  prereg::test::checking_device dev(make_cpu_device());
  const raw_run raw = measure(dev, dev.probe(), plan_of(p), planted, progress);
  const auto &seen = dev.checks_seen;
  CHECK(g_host_calls == 0);                // nothing on the host's path
  CHECK(seen.references == 0);             // not a reference the device knows itself
  CHECK(seen.adopted == g_device_calls);   // every device reference adopted
  CHECK(g_device_calls >= 2);              // the gate's, then the spot slots'
  CHECK(seen.fills == 3 * g_device_calls); // x, gamma, beta drawn on the device per call
  CHECK(seen.comparisons >= 4 * 3);        // y, mean, rstd of each gate check at least
  CHECK(record_of(raw, "honest").passed);
  const correctness_record &wrong = record_of(raw, "wrong");
  CHECK_FALSE(wrong.passed);
  CHECK(wrong.detail.rfind("y: element ", 0) == 0);
  const correctness_record &cached = record_of(raw, "caches");
  CHECK_FALSE(cached.passed);
  CHECK(cached.detail.rfind("timed sample ", 0) == 0);
  CHECK(record_of(raw, "mutates").passed);
  for (const auto &c : raw.cells) {
    INFO(c.key.arm);
    CHECK(c.spot_checks == 3);
    CHECK(c.input_mutated.has_value() == (c.key.arm == "mutates"));
  }
}

TEST_CASE("an operation file's device reference that fails fails every cell, without the host") {
  g_device_calls = g_host_calls = 0;
  g_fail = true;
  const protocol p = file_protocol();
  quiet_progress progress;
  prereg::test::checking_device dev(make_cpu_device());
  const raw_run raw = measure(dev, dev.probe(), plan_of(p), planted, progress);
  g_fail = false;
  CHECK(g_host_calls == 0);
  // Once at the gate for the shape (its cells all fail with it), then once per cell at its
  // first spot check (the cell's measurement fails, as on the host path).
  CHECK(g_device_calls == 1 + 4);
  for (const auto &c : raw.cells) {
    INFO(c.key.arm);
    REQUIRE(c.error.has_value());
    CHECK(*c.error == "measurement: operation lnfile: the reference at fwd 8x64 raised "
                      "ValueError: planted (ln.py)");
  }
  REQUIRE(raw.correctness.size() == 4);
  for (const auto &r : raw.correctness) {
    INFO(r.key.arm);
    CHECK_FALSE(r.passed);
    CHECK(r.detail == "the operation's reference failed: operation lnfile: the reference at fwd "
                      "8x64 raised ValueError: planted (ln.py)");
  }
}

TEST_CASE("an operation file's device reference that cannot serve leaves the checks to the host") {
  g_device_calls = g_host_calls = 0;
  g_unavailable = true;
  g_cache.clear();
  const protocol p = file_protocol();
  quiet_progress progress;
  prereg::test::checking_device dev(make_cpu_device());
  const raw_run raw = measure(dev, dev.probe(), plan_of(p), planted, progress);
  g_unavailable = false;
  CHECK(g_device_calls >= 1);
  CHECK(g_host_calls >= 1);
  CHECK(dev.checks_seen.adopted == 0);
  CHECK(record_of(raw, "honest").passed);
  CHECK_FALSE(record_of(raw, "wrong").passed);
  CHECK_FALSE(record_of(raw, "caches").passed);
}

TEST_CASE("the poison fill writes reference::poison's bytes on every device") {
  const std::unique_ptr<device> cpu = make_cpu_device();
  prereg::test::checking_device wrapped(make_cpu_device()); // forwards to the CPU device's
  for (const dtype type : {dtype::fp32, dtype::fp16, dtype::bf16})
    for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{300001}}) {
      INFO(to_string(type), " ", n);
      const auto want = reference::poison(n, type);
      for (device *d : {cpu.get(), static_cast<device *>(&wrapped)}) {
        void *p = d->allocate(want.size());
        d->fill_poison(p, n, type);
        CHECK(std::memcmp(p, want.data(), want.size()) == 0);
        d->release(p);
      }
    }
  CHECK(reference::poison_bits(dtype::fp32) == 0x7fe5a5a5u);
  std::vector<std::uint8_t> host(6);
  reference::fill_poison(host.data(), 3, dtype::bf16);
  CHECK(reference::unpack(host, dtype::bf16).size() == 3);
  for (const double v : reference::unpack(host, dtype::bf16))
    CHECK(reference::is_poison(v));
}
