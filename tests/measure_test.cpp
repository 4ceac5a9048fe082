// Tests of the measurement engine on the CPU device: probe, memory refusal, a small measured
// plan, sample order, instrument facts, and planted wrong arms failing correctness.
#include "base/rng.hpp"
#include "checks_device.hpp"
#include "device/device.hpp"
#include "engine/measure.hpp"
#include "spec/arm_code.hpp"
#include "spec/registry.hpp"
#include "spec/roofs.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

using namespace prereg;

namespace {

class recording_progress final : public progress_sink {
public:
  void phase(std::string_view name) override { phases.emplace_back(name); }
  void cell_done(std::size_t done, std::size_t total) override {
    last_done = done;
    last_total = total;
  }
  std::vector<std::string> phases;
  std::size_t last_done = 0, last_total = 0;
};

protocol small_protocol(order_mode order, bool flush) {
  protocol p;
  p.id = "cpu_backend_test";
  p.title = "CPU backend test";
  p.hypothesis = "none";
  p.device = "cpu";
  p.op = "layernorm";
  p.type = dtype::fp32;
  p.rows = {4, 32};
  p.cols = {96};
  p.passes = {pass_kind::fwd, pass_kind::fwd_bwd};
  p.arms = {{"unfused", "layernorm.unfused", launch_mode::stream, 1},
            {"fused", "layernorm.fused", launch_mode::stream, 2}};
  p.measurement.repetitions = 5;
  p.measurement.warmup = 2;
  p.measurement.l2_flush = flush;
  p.measurement.order = order;
  p.correctness = {1e-5, 1e-5};
  return p;
}

// Every arm x pass x rows x cols, in protocol order.
run_plan plan_of(const protocol &p, std::uint64_t seed) {
  run_plan plan{&p, {}, seed};
  for (const auto &a : p.arms)
    for (pass_kind pass : p.passes)
      for (auto r : p.rows)
        for (auto c : p.cols)
          plan.cells.push_back({a.id, pass, r, c});
  return plan;
}

struct measured {
  protocol proto;
  raw_run raw;
  std::vector<cell_key> order; // every timed sample's cell, in measurement order
  recording_progress progress;
};

// The interleaved, flushed run, measured once for every test case that looks at it.
const measured &interleaved_run() {
  static const measured m = [] {
    measured r;
    r.proto = small_protocol(order_mode::interleaved, true);
    engine_hooks hooks;
    hooks.on_sample = [&r](const cell_key &k) { r.order.push_back(k); };
    auto dev = make_cpu_device();
    r.raw = measure(*dev, dev->probe(), plan_of(r.proto, 0x5eed), builtin_resolver(), r.progress,
                    hooks);
    return r;
  }();
  return m;
}

const cell_record &cell_of(const raw_run &raw, std::string_view arm, pass_kind pass,
                           std::int64_t rows) {
  for (const auto &c : raw.cells)
    if (c.key.arm == arm && c.key.pass == pass && c.key.rows == rows)
      return c;
  FAIL("no such cell");
  throw std::logic_error("unreachable");
}

// Planted arms: wrong y; dx never written; a forward that throws.
void unnormalised_forward(const norm_tensors &t, step_allocator &, void *) {
  const auto *x = static_cast<const float *>(t.x);
  auto *y = static_cast<float *>(t.y);
  for (std::int64_t i = 0; i < t.rows * t.cols; ++i)
    y[i] = x[i];
  for (std::int64_t r = 0; r < t.rows; ++r)
    t.mean[r] = t.rstd[r] = 0;
}
void lazy_backward(const norm_tensors &t, step_allocator &, void *) {
  std::memset(t.dgamma, 0, static_cast<std::size_t>(t.cols) * 4);
  std::memset(t.dbeta, 0, static_cast<std::size_t>(t.cols) * 4);
}
void throwing_forward(const norm_tensors &, step_allocator &, void *) {
  throw std::runtime_error("planted failure");
}
const arm_ops wrong_y_ops{&unnormalised_forward, &lazy_backward};
const arm_ops lazy_dx_ops{builtin_arm_code(*find_arm("cpu", "layernorm.fused")).norm->forward,
                          &lazy_backward};
const arm_ops throwing_ops{&throwing_forward, &lazy_backward};

} // namespace

TEST_CASE("cpu device: probe describes the host") {
  auto b = make_cpu_device();
  CHECK(b->kind() == "cpu");
  const json env = b->probe();
  CHECK_FALSE(env.at("device_name").get<std::string>().empty());
  CHECK(env.at("cores").get<int>() >= 1);
  CHECK(env.at("memory_bytes").get<std::uint64_t>() > 0);
  CHECK(env.contains("llc_bytes"));
  CHECK(env.at("other_processes") == "unknown");
  CHECK_FALSE(env.at("kernel").get<std::string>().empty());
}

TEST_CASE("engine: device_cannot_run refuses a cell that would not fit in memory") {
  auto b = make_cpu_device();
  const arm_info *arm = find_arm("cpu", "layernorm.unfused");
  REQUIRE(arm != nullptr);
  const operation_desc &op = operation_named("layernorm");
  const arm_spec spec{"u", "layernorm.unfused", launch_mode::stream, 1};
  CHECK_FALSE(
      device_cannot_run(*b, op, *arm, spec, pass_kind::fwd_bwd, 64, 1024, dtype::fp32).has_value());
  const auto reason = device_cannot_run(*b, op, *arm, spec, pass_kind::fwd_bwd,
                                        std::int64_t{1} << 30, 65536, dtype::fp32);
  REQUIRE(reason.has_value());
  CHECK(reason->find("GiB") != std::string::npos);
  CHECK(reason->find("float64 reference") != std::string::npos);
  CHECK(reason->find("the cpu device allows a cell") != std::string::npos);
  // Graph launch needs a device that can capture.
  const arm_spec graph{"g", "layernorm.unfused", launch_mode::graph, 1};
  const auto no_graph =
      device_cannot_run(*b, op, *arm, graph, pass_kind::fwd, 64, 1024, dtype::fp32);
  REQUIRE(no_graph.has_value());
  CHECK(no_graph->rfind("launch: graph: ", 0) == 0);
}

TEST_CASE(
    "engine on the cpu device: a measured plan has every sample, correct arms and honest memory") {
  const measured &m = interleaved_run();
  const raw_run &raw = m.raw;
  CHECK(m.progress.phases == std::vector<std::string>{"correctness", "instrument", "launch floor",
                                                      "ceiling", "write ceiling", "read ceiling",
                                                      "compute ceiling fp32", "timing"});
  CHECK(m.progress.last_done == 8);
  CHECK(m.progress.last_total == 8);
  CHECK(raw.environment.at("other_processes") == "unknown");
  CHECK(raw.deviations.empty());

  REQUIRE(raw.cells.size() == 8);
  for (const auto &c : raw.cells) {
    INFO(c.key.arm << " " << to_string(c.key.pass) << " " << c.key.rows);
    CHECK_FALSE(c.error.has_value());
    REQUIRE(c.samples_ms.size() == 5);
    for (double s : c.samples_ms)
      CHECK((std::isfinite(s) && s > 0));
    CHECK(c.harness_bytes_in_window == 0);
  }
  for (std::int64_t rows : {4, 32}) {
    CHECK(cell_of(raw, "unfused", pass_kind::fwd, rows).peak_bytes > 0);
    CHECK(cell_of(raw, "unfused", pass_kind::fwd_bwd, rows).peak_bytes > 0);
    CHECK(cell_of(raw, "fused", pass_kind::fwd, rows).peak_bytes == 0);
    CHECK(cell_of(raw, "fused", pass_kind::fwd_bwd, rows).peak_bytes > 0);
  }
  // The unfused forward holds at least two [rows*cols] fp32 intermediates at once.
  CHECK(cell_of(raw, "unfused", pass_kind::fwd, 32).peak_bytes >= 2 * 32 * 96 * 4);

  REQUIRE(raw.correctness.size() == 8);
  for (const auto &c : raw.correctness) {
    INFO(c.key.arm << " " << to_string(c.key.pass) << " " << c.key.rows << ": " << c.detail);
    CHECK(c.passed);
    CHECK_FALSE(c.unwritten);
    CHECK(c.detail.empty());
    CHECK(c.max_abs_error < 1e-4);
  }
}

TEST_CASE("engine on the cpu device: the instrument's own facts") {
  const measured &m = interleaved_run();
  const instrument_record &ins = m.raw.instrument;
  CHECK(ins.llc_bytes == m.raw.environment.at("llc_bytes").get<std::uint64_t>());
  CHECK(ins.flush_method == "read-sweep");
  if (ins.llc_bytes > 0)
    CHECK(ins.flush_bytes >= 2 * ins.llc_bytes);
  else
    CHECK(ins.flush_bytes == 64ull << 20);
  CHECK(ins.ceiling_bytes >= 2 * ins.llc_bytes);
  CHECK(ins.ceiling_bytes >= 64ull << 20);
  CHECK(ins.ceiling_samples_gbps.size() >= 9);
  for (double g : ins.ceiling_samples_gbps)
    CHECK((std::isfinite(g) && g > 0));
  CHECK(ins.ceiling_gbps > 0);
  CHECK(ins.timer_resolution_ms > 0);
  CHECK((std::isfinite(ins.launch_floor_ms) && ins.launch_floor_ms >= 0));
  // The roofs (docs/cpu.md): the real read sweep, memset and FMA loop, measured (no timing
  // assertion: present, positive, finite, the rates their samples' medians').
  REQUIRE(ins.roofs.has_value());
  for (const stream_roof *r : {&ins.roofs->read, &ins.roofs->write}) {
    CHECK(r->bytes == ins.flush_bytes);
    CHECK(r->samples_ms.size() == 3);
    for (const double ms : r->samples_ms)
      CHECK((std::isfinite(ms) && ms > 0));
    CHECK((std::isfinite(r->gbps) && r->gbps > 0));
    CHECK(!r->method.empty());
  }
  CHECK(ins.roofs->read.method.find("read-sweep") == 0);
  CHECK(ins.roofs->write.method.find("memset") == 0);
  // fp32 cells: the fp32 loop, and no other type.
  REQUIRE(ins.roofs->compute.size() == 1);
  const compute_roof &c = ins.roofs->compute.at("fp32");
  CHECK(c.unknown.empty());
  CHECK(c.method.find("fp32 loop of 12 independent multiply-add chains") == 0);
  CHECK(c.flops % (std::uint64_t{1} << 20) == 0);
  CHECK(c.samples_ms.size() == 9);
  CHECK((std::isfinite(c.tflops) && c.tflops > 0));
  CHECK(roofs_problem(*ins.roofs).empty());
  MESSAGE("cpu roofs: read " << ins.roofs->read.gbps << " GB/s, write " << ins.roofs->write.gbps
                             << " GB/s, copy " << ins.ceiling_gbps << " GB/s, fp32 "
                             << c.tflops * 1e3 << " GFLOP/s (" << c.method << ")");
  std::string why;
  CHECK_FALSE(make_cpu_device()->compute_ceiling("bf16", why));
  CHECK(why == "the cpu device has no bf16 arithmetic loop (it measures fp32 only)");
}

TEST_CASE("engine: interleaved order is a seeded shuffle of the arms per repetition") {
  const measured &m = interleaved_run();
  // 4 groups (pass x rows) x 5 repetitions x 2 arms.
  REQUIRE(m.order.size() == 40);
  rng expected(stream_seed(0x5eed, stream_id::arm_order));
  int fused_first = 0, unfused_first = 0;
  for (std::size_t g = 0; g < 4; ++g)
    for (std::size_t r = 0; r < 5; ++r) {
      const cell_key &a = m.order[g * 10 + r * 2];
      const cell_key &b = m.order[g * 10 + r * 2 + 1];
      CHECK(a.arm != b.arm); // each arm once per repetition
      CHECK((a.pass == b.pass && a.rows == b.rows && a.cols == b.cols));
      CHECK(a.pass == (g < 2 ? pass_kind::fwd : pass_kind::fwd_bwd)); // plan order of groups
      // Fisher-Yates over {unfused, fused} draws below(2) once: 0 swaps them.
      const std::string first = expected.below(2) == 0 ? "fused" : "unfused";
      CHECK(a.arm == first);
      (a.arm == "fused" ? fused_first : unfused_first)++;
    }
  CHECK(fused_first > 0);
  CHECK(unfused_first > 0);
}

TEST_CASE("engine: sequential order, no flush, planted wrong arms") {
  protocol p = small_protocol(order_mode::sequential, false);
  p.rows = {4};
  p.arms.push_back({"wrong_y", "layernorm.fused", launch_mode::stream, 1});
  p.arms.push_back({"lazy_dx", "layernorm.fused", launch_mode::stream, 1});
  p.arms.push_back({"throws", "layernorm.fused", launch_mode::stream, 1});
  std::vector<cell_key> order;
  engine_hooks hooks;
  hooks.on_sample = [&](const cell_key &k) { order.push_back(k); };
  const arm_resolver resolve = [](const arm_spec &a, const arm_info &info) -> arm_code {
    if (a.id == "wrong_y")
      return {&wrong_y_ops, nullptr};
    if (a.id == "lazy_dx")
      return {&lazy_dx_ops, nullptr};
    if (a.id == "throws")
      return {&throwing_ops, nullptr};
    return builtin_arm_code(info);
  };
  recording_progress progress;
  auto dev = make_cpu_device();
  const raw_run raw = measure(*dev, dev->probe(), plan_of(p, 7), resolve, progress, hooks);

  CHECK(raw.instrument.flush_bytes == 0);
  CHECK(raw.instrument.flush_method == "none");
  CHECK(raw.instrument.ceiling_gbps > 0);

  // Arm by arm within each (pass, shape): the samples of one cell are consecutive.
  REQUIRE(order.size() == 2 * 4 * 5); // "throws" never reaches a sample
  for (std::size_t i = 0; i < order.size(); ++i)
    CHECK(order[i] == order[i / 5 * 5]);
  CHECK(order[0].arm == "unfused");
  CHECK(order[5].arm == "fused");

  std::map<std::string, const correctness_record *> fwd, bwd;
  for (const auto &c : raw.correctness)
    (c.key.pass == pass_kind::fwd ? fwd : bwd)[c.key.arm] = &c;
  REQUIRE(fwd.size() == 5);
  REQUIRE(bwd.size() == 5);
  CHECK(fwd["unfused"]->passed);
  CHECK(bwd["fused"]->passed);

  CHECK_FALSE(fwd["wrong_y"]->passed);
  CHECK(fwd["wrong_y"]->detail.rfind("y: element 0 (row 0, col 0)", 0) == 0);
  CHECK(fwd["wrong_y"]->max_abs_error > 0.1);
  CHECK_FALSE(fwd["wrong_y"]->unwritten);
  CHECK_FALSE(bwd["wrong_y"]->passed);
  CHECK(bwd["wrong_y"]->detail.rfind("y:", 0) == 0); // y is checked before dx

  CHECK(fwd["lazy_dx"]->passed); // its forward is the real one
  CHECK_FALSE(bwd["lazy_dx"]->passed);
  CHECK(bwd["lazy_dx"]->unwritten);
  CHECK(bwd["lazy_dx"]->detail == "dx: unwritten (still poison) at element 0 (row 0, col 0)");

  CHECK_FALSE(fwd["throws"]->passed);
  CHECK(fwd["throws"]->detail == "the arm failed in its correctness run: planted failure");

  // The failing arm is recorded and the run goes on.
  for (const auto &c : raw.cells) {
    INFO(c.key.arm);
    if (c.key.arm == "throws") {
      REQUIRE(c.error.has_value());
      CHECK(c.error->find("planted failure") != std::string::npos);
      CHECK(c.samples_ms.empty());
    } else {
      CHECK_FALSE(c.error.has_value());
      CHECK(c.samples_ms.size() == 5);
    }
  }
}

TEST_CASE("engine: an arm without code in this build is a cell-skipped deviation, not a crash") {
  protocol p = small_protocol(order_mode::interleaved, false);
  p.rows = {4};
  p.passes = {pass_kind::fwd};
  const arm_resolver resolve = [](const arm_spec &a, const arm_info &info) -> arm_code {
    return a.id == "fused" ? arm_code{} : builtin_arm_code(info);
  };
  recording_progress progress;
  auto dev = make_cpu_device();
  const raw_run raw = measure(*dev, dev->probe(), plan_of(p, 3), resolve, progress);
  REQUIRE(raw.deviations.size() == 1);
  CHECK(raw.deviations[0].at("kind") == "cell-skipped");
  CHECK(raw.deviations[0].at("cell").at("arm") == "fused");
  CHECK(raw.deviations[0].at("message") ==
        "kernel layernorm.fused has no cpu implementation in this build");
  REQUIRE(raw.cells.size() == 1); // only the unfused cell was timed
  CHECK(raw.cells[0].key.arm == "unfused");
  CHECK(raw.cells[0].samples_ms.size() == 5);
  REQUIRE(raw.correctness.size() == 1);
  CHECK(raw.correctness[0].passed);
}

TEST_CASE("engine: an operation on the generic seam (softmax) is gated, timed and billed") {
  protocol p = small_protocol(order_mode::interleaved, false);
  p.op = "softmax";
  p.rows = {3, 17};
  p.cols = {40};
  p.arms = {{"unfused", "softmax.unfused", launch_mode::stream, 1},
            {"fused", "softmax.fused", launch_mode::stream, 2}};
  recording_progress progress;
  auto dev = make_cpu_device();
  const raw_run raw = measure(*dev, dev->probe(), plan_of(p, 11), builtin_resolver(), progress);
  CHECK(raw.deviations.empty());
  REQUIRE(raw.correctness.size() == 8);
  for (const auto &c : raw.correctness) {
    INFO(c.key.arm, " ", to_string(c.key.pass), " ", c.key.rows, ": ", c.detail);
    CHECK(c.passed);
    CHECK(c.max_abs_error < 1e-5);
  }
  REQUIRE(raw.cells.size() == 8);
  for (const auto &c : raw.cells) {
    INFO(c.key.arm, " ", to_string(c.key.pass), " ", c.key.rows);
    CHECK_FALSE(c.error.has_value());
    CHECK(c.samples_ms.size() == 5);
    if (c.key.arm == "fused")
      CHECK(c.peak_bytes == 0);
    else
      CHECK(c.peak_bytes >= static_cast<std::uint64_t>(c.key.rows * c.key.cols) * 4);
  }
}

TEST_CASE("engine: a wrong arm on the generic seam fails the gate by tensor name") {
  protocol p = small_protocol(order_mode::interleaved, false);
  p.op = "softmax";
  p.rows = {2};
  p.cols = {8};
  p.passes = {pass_kind::fwd};
  p.arms = {{"wrong", "softmax.fused", launch_mode::stream, 1}};
  static const arm_entry identity{[](const tensor_args &t, step_allocator &, void *) {
                                    std::memcpy(t.data[1], t.data[0],
                                                static_cast<std::size_t>(t.rows * t.cols) * 4);
                                  },
                                  nullptr};
  const arm_resolver resolve = [](const arm_spec &, const arm_info &) {
    return arm_code{nullptr, &identity};
  };
  recording_progress progress;
  auto dev = make_cpu_device();
  const raw_run raw = measure(*dev, dev->probe(), plan_of(p, 5), resolve, progress);
  REQUIRE(raw.correctness.size() == 1);
  CHECK_FALSE(raw.correctness[0].passed);
  CHECK(raw.correctness[0].detail.rfind("y: element 0 (row 0, col 0) is ", 0) == 0);
}

TEST_CASE("the instrument's set-up ticks, so progress stays alive and an interrupt acts in it") {
  class ticking final : public progress_sink {
  public:
    void phase(std::string_view name) override { current = name; }
    void cell_done(std::size_t, std::size_t) override {}
    void tick() override {
      ++ticks[current];
      if (stop_in == current)
        throw std::runtime_error("interrupted in " + current);
    }
    std::string current;
    std::string stop_in;
    std::map<std::string, int> ticks;
  };
  const protocol p = small_protocol(order_mode::interleaved, true);
  auto dev = make_cpu_device();
  ticking progress;
  (void)measure(*dev, dev->probe(), plan_of(p, 9), builtin_resolver(), progress);
  CHECK(progress.ticks["instrument"] >= 2);
  CHECK(progress.ticks["launch floor"] >= 2);
  CHECK(progress.ticks["ceiling"] >= 2);
  ticking stopping;
  stopping.stop_in = "ceiling";
  CHECK_THROWS_WITH(measure(*dev, dev->probe(), plan_of(p, 9), builtin_resolver(), stopping),
                    "interrupted in ceiling");
  CHECK(stopping.ticks["ceiling"] == 1); // the first step after the interrupt stops it
}

namespace {

// Planted cheating arms for the guards (issue 12 item 7).
const arm_ops &fused_ops() { return *builtin_arm_code(*find_arm("cpu", "layernorm.fused")).norm; }

// Remembers each call's input pointer (rotation); computes the real forward.
std::vector<const void *> g_inputs_seen;
void pointer_recording_forward(const norm_tensors &t, step_allocator &a, void *s) {
  g_inputs_seen.push_back(t.x);
  fused_ops().forward(t, a, s);
}
// Caches its output by input pointer: computes once per pointer, then copies the cache.
std::map<const void *, std::vector<float>> g_cache;
void caching_forward(const norm_tensors &t, step_allocator &a, void *s) {
  const auto n = static_cast<std::size_t>(t.rows * t.cols);
  auto *y = static_cast<float *>(t.y);
  if (const auto it = g_cache.find(t.x); it != g_cache.end()) {
    std::memcpy(y, it->second.data(), n * 4);
    std::memcpy(t.mean, it->second.data() + n, static_cast<std::size_t>(t.rows) * 4);
    std::memcpy(t.rstd, it->second.data() + n + t.rows, static_cast<std::size_t>(t.rows) * 4);
    return;
  }
  fused_ops().forward(t, a, s);
  std::vector<float> keep(n + 2 * static_cast<std::size_t>(t.rows));
  std::memcpy(keep.data(), y, n * 4);
  std::memcpy(keep.data() + n, t.mean, static_cast<std::size_t>(t.rows) * 4);
  std::memcpy(keep.data() + n + t.rows, t.rstd, static_cast<std::size_t>(t.rows) * 4);
  g_cache[t.x] = std::move(keep);
}
// Computes the right answer, then scribbles on its input.
void mutating_forward(const norm_tensors &t, step_allocator &a, void *s) {
  fused_ops().forward(t, a, s);
  static_cast<float *>(const_cast<void *>(t.x))[1] += 1.0f;
}
// Writes zeros everywhere: passes an elementwise check under a loose atol.
void zero_forward(const norm_tensors &t, step_allocator &, void *) {
  std::memset(t.y, 0, static_cast<std::size_t>(t.rows * t.cols) * 4);
  std::memset(t.mean, 0, static_cast<std::size_t>(t.rows) * 4);
  std::memset(t.rstd, 0, static_cast<std::size_t>(t.rows) * 4);
}
const arm_ops recording_ops{&pointer_recording_forward, nullptr};
const arm_ops caching_ops{&caching_forward, nullptr};
const arm_ops mutating_ops{&mutating_forward, nullptr};
const arm_ops zero_ops{&zero_forward, nullptr};

protocol guard_protocol(order_mode order) {
  protocol p = small_protocol(order, false);
  p.rows = {8};
  p.cols = {64};
  p.passes = {pass_kind::fwd};
  p.measurement.repetitions = 6;
  p.arms = {{"honest", "layernorm.fused", launch_mode::stream, 1},
            {"records", "layernorm.fused", launch_mode::stream, 1},
            {"caches", "layernorm.fused", launch_mode::stream, 1},
            {"mutates", "layernorm.fused", launch_mode::stream, 1}};
  return p;
}

arm_code guard_arm(const arm_spec &a, const arm_info &info) {
  if (a.id == "records")
    return {&recording_ops, nullptr};
  if (a.id == "caches")
    return {&caching_ops, nullptr};
  if (a.id == "mutates")
    return {&mutating_ops, nullptr};
  if (a.id == "zeros")
    return {&zero_ops, nullptr};
  return builtin_arm_code(info);
}

const correctness_record &record_of(const raw_run &raw, std::string_view arm) {
  for (const auto &c : raw.correctness)
    if (c.key.arm == arm)
      return c;
  FAIL("no correctness record");
  throw std::logic_error("unreachable");
}

} // namespace

TEST_CASE("guards: rotation, spot checks and mutated inputs catch planted cheating arms") {
  for (const order_mode order : {order_mode::interleaved, order_mode::sequential}) {
    INFO(static_cast<int>(order));
    g_inputs_seen.clear();
    g_cache.clear();
    const protocol p = guard_protocol(order);
    recording_progress progress;
    auto dev = make_cpu_device();
    const raw_run raw = measure(*dev, dev->probe(), plan_of(p, 21), guard_arm, progress);
    REQUIRE(raw.cells.size() == 4);

    // Rotation: no two consecutive calls of an arm see the same input buffer.
    REQUIRE(g_inputs_seen.size() >= 1 + 3 + 6); // gate, warm-ups, samples
    for (std::size_t i = 2; i < g_inputs_seen.size(); ++i)
      CHECK(g_inputs_seen[i] != g_inputs_seen[i - 1]);

    // The honest arm passes its gate and every spot check; no mutation.
    CHECK(record_of(raw, "honest").passed);
    CHECK(record_of(raw, "records").passed);
    for (const auto &c : raw.cells) {
      INFO(c.key.arm);
      CHECK(c.samples_ms.size() == 6);
      CHECK(c.spot_checks >= 1);
      CHECK(c.spot_checks <= 3);
      CHECK(std::isfinite(c.first_call_ms));
      CHECK(c.first_call_ms >= 0);
      CHECK(c.warmup_calls >= 3); // warmup 2, then at least 3 until settled
      CHECK(c.warmup_calls <= 2 + 16);
      CHECK(std::isnan(c.off_window_ms)); // the cpu device cannot tell
      CHECK(c.input_mutated.has_value() == (c.key.arm == "mutates"));
    }

    // The caching arm passes the gate (its first call at a pointer is real) but a timed output
    // is stale: its correctness record fails, naming the timed sample.
    const correctness_record &cached = record_of(raw, "caches");
    CHECK_FALSE(cached.passed);
    CHECK(cached.detail.rfind("timed sample ", 0) == 0);
    CHECK(cached.detail.find(": y: element ") != std::string::npos);

    // The mutating arm's outputs are right; its changed input is recorded.
    CHECK(record_of(raw, "mutates").passed);
    for (const auto &c : raw.cells)
      if (c.key.arm == "mutates") {
        REQUIRE(c.input_mutated.has_value());
        CHECK(c.input_mutated->rfind("timed sample ", 0) == 0);
        CHECK(c.input_mutated->find(": x: element 1 (row 0, col 1) was ") != std::string::npos);
      }
  }
}

TEST_CASE("guards: a grading's input sets set how many timed samples are spot-checked") {
  for (const std::int64_t sets : {2, 4, 7}) {
    INFO(sets);
    protocol p = guard_protocol(order_mode::interleaved);
    p.arms = {{"honest", "layernorm.fused", launch_mode::stream, 1},
              {"caches", "layernorm.fused", launch_mode::stream, 1}};
    p.grading = grading_spec{std::string(64, 'a'), "GRADE-x", "baseline", "",
                             std::string(32, '1'), "",        sets};
    g_cache.clear();
    recording_progress progress;
    auto dev = make_cpu_device();
    const raw_run raw = measure(*dev, dev->probe(), plan_of(p, 21), guard_arm, progress);
    for (const auto &c : raw.cells)
      CHECK(c.spot_checks == sets - 1); // distinct repetitions in a grading, the last among them
    CHECK(record_of(raw, "honest").passed);
    CHECK_FALSE(record_of(raw, "caches").passed); // one checked window (the last) is enough
  }
}

TEST_CASE("guards: an arm that writes zeros fails the gate even under a loose atol") {
  protocol p = guard_protocol(order_mode::interleaved);
  p.arms = {{"zeros", "layernorm.fused", launch_mode::stream, 1}};
  p.correctness = {1e-5, 100.0}; // every |y| is far below atol
  recording_progress progress;
  auto dev = make_cpu_device();
  const raw_run raw = measure(*dev, dev->probe(), plan_of(p, 4), guard_arm, progress);
  const correctness_record &z = record_of(raw, "zeros");
  CHECK_FALSE(z.passed);
  CHECK(z.detail.rfind("y: every element is 0, the reference is not constant (element 0 (row 0, "
                       "col 0) is ",
                       0) == 0);
}

TEST_CASE("guards: the memory estimate counts both rotation blocks") {
  auto b = make_cpu_device();
  const arm_info *arm = find_arm("cpu", "layernorm.unfused");
  const operation_desc &op = operation_named("layernorm");
  const arm_spec spec{"u", "layernorm.unfused", launch_mode::stream, 3};
  const auto reason = device_cannot_run(*b, op, *arm, spec, pass_kind::fwd_bwd,
                                        std::int64_t{1} << 30, 65536, dtype::fp32);
  REQUIRE(reason.has_value());
  CHECK(reason->find("(7 buffer set(s) of ") != std::string::npos); // 2 x 3 + 1
}

namespace {

// Works only when its output is poisoned (a spot check, if only checked calls were poisoned);
// otherwise leaves the last outputs in place and counts the calls it skipped.
int g_skipped = 0;
void peeking_forward(const norm_tensors &t, step_allocator &a, void *s) {
  if (!std::isnan(static_cast<const float *>(t.y)[0])) {
    ++g_skipped;
    return;
  }
  fused_ops().forward(t, a, s);
}
const arm_ops peeking_ops{&peeking_forward, nullptr};

} // namespace

TEST_CASE("guards: every window poisons the outputs, so a spot check cannot be told apart") {
  g_skipped = 0;
  protocol p = guard_protocol(order_mode::interleaved);
  p.arms = {{"peeks", "layernorm.fused", launch_mode::stream, 2}};
  const arm_resolver resolve = [](const arm_spec &, const arm_info &) {
    return arm_code{&peeking_ops, nullptr};
  };
  recording_progress progress;
  auto dev = make_cpu_device();
  const raw_run raw = measure(*dev, dev->probe(), plan_of(p, 9), resolve, progress);
  REQUIRE(raw.cells.size() == 1);
  CHECK(raw.cells[0].samples_ms.size() == 6);
  CHECK(record_of(raw, "peeks").passed);
  CHECK(g_skipped == 0); // it always found poison: it had to compute every call
}

TEST_CASE("guards on the device path: checked calls through device_checks catch the same arms") {
  // The engine's device path (docs/engine.md, "What is computed where") on the CPU: inputs drawn
  // by fill_input, the reference held by the device, outputs and inputs compared through the
  // seam. The planted arms are caught as on the host path.
  for (const order_mode order : {order_mode::interleaved, order_mode::sequential}) {
    INFO(static_cast<int>(order));
    g_inputs_seen.clear();
    g_cache.clear();
    const protocol p = guard_protocol(order);
    recording_progress progress;
    prereg::test::checking_device dev(make_cpu_device());
    const raw_run raw = measure(dev, dev.probe(), plan_of(p, 21), guard_arm, progress);
    REQUIRE(raw.cells.size() == 4);
    const auto &seen = dev.checks_seen;
    CHECK(seen.references >= 2);              // the gate's group, then the spot slots' data
    CHECK(seen.fills == seen.references * 3); // x, gamma, beta per checked call
    CHECK(seen.comparisons > 4 * 3);          // y, mean, rstd of every gate and spot check
    CHECK(seen.differences >= 4);             // inputs after spot-checked windows
    CHECK(record_of(raw, "honest").passed);
    CHECK(record_of(raw, "records").passed);
    const correctness_record &cached = record_of(raw, "caches");
    CHECK_FALSE(cached.passed);
    CHECK(cached.detail.rfind("timed sample ", 0) == 0);
    CHECK(cached.detail.find(": y: element ") != std::string::npos);
    CHECK(record_of(raw, "mutates").passed);
    for (const auto &c : raw.cells) {
      INFO(c.key.arm);
      CHECK(c.input_mutated.has_value() == (c.key.arm == "mutates"));
      if (c.input_mutated)
        CHECK(c.input_mutated->find(": x: element 1 (row 0, col 1) was ") != std::string::npos);
    }
  }
}

TEST_CASE("guards on the device path: wrong and zero outputs fail the gate") {
  const arm_resolver resolve = [](const arm_spec &a, const arm_info &info) -> arm_code {
    if (a.id == "wrong_y")
      return {&wrong_y_ops, nullptr};
    return guard_arm(a, info);
  };
  protocol p = guard_protocol(order_mode::sequential);
  p.arms = {{"honest", "layernorm.fused", launch_mode::stream, 1},
            {"wrong_y", "layernorm.fused", launch_mode::stream, 1}};
  recording_progress progress;
  prereg::test::checking_device dev(make_cpu_device());
  const raw_run raw = measure(dev, dev.probe(), plan_of(p, 5), resolve, progress);
  CHECK(record_of(raw, "honest").passed);
  const correctness_record &wrong = record_of(raw, "wrong_y");
  CHECK_FALSE(wrong.passed);
  CHECK(wrong.detail.rfind("y: element ", 0) == 0);
  CHECK(wrong.detail.find(", reference ") != std::string::npos);

  p.arms = {{"zeros", "layernorm.fused", launch_mode::stream, 1}};
  p.correctness = {1e-5, 100.0}; // every |y| is far below atol: only the constant rule catches it
  prereg::test::checking_device dev2(make_cpu_device());
  const raw_run raw2 = measure(dev2, dev2.probe(), plan_of(p, 4), guard_arm, progress);
  CHECK(
      record_of(raw2, "zeros")
          .detail.rfind(
              "y: every element is 0, the reference is not constant (element 0 (row 0, col 0) is ",
              0) == 0);
}
