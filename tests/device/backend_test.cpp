// The engine on the CUDA device: probe fields, refusals, and tiny plans measured end to end
// (stream and graph launch, interleaved and sequential order).
#include "device_helpers.hpp"

#include "prereg/error.hpp"
#include "spec/registry.hpp"

#include <algorithm>

using namespace prereg;
using namespace prereg::device_test;

TEST_CASE("probe describes the device") {
  const auto b = make_cuda_device(0);
  CHECK(b->kind() == "cuda");
  const json env = b->probe();
  CHECK(env.at("device_name").get<std::string>().size() > 0);
  CHECK(env.at("driver_version").is_string());
  CHECK(env.at("runtime_version").is_string());
  CHECK(env.at("sm_count").get<int>() > 0);
  CHECK(env.at("l2_bytes").get<std::int64_t>() > 0);
  CHECK(env.at("memory_bytes").get<std::uint64_t>() > 0);
  CHECK(env.at("cc").get<std::string>().find('.') != std::string::npos);
  CHECK(env.at("sm_clock_mhz").get<double>() > 100.0);
  CHECK(env.at("sm_clock_mhz").get<double>() < 5000.0);
  const json &procs = env.at("other_processes");
  CHECK((procs.is_array() || procs == "unknown"));
  if (procs.is_array())
    for (const auto &p : procs) {
      CHECK(p.contains("pid"));
      CHECK(p.contains("used_bytes"));
    }
  MESSAGE(env.dump());
}

TEST_CASE("a device ordinal out of range is an environment error (exit 5)") {
  try {
    (void)make_cuda_device(4096);
    FAIL("no error");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::environment);
    CHECK(std::string(e.what()).find("4096") != std::string::npos);
  }
}

TEST_CASE("device_cannot_run refuses a cell that does not fit in 80% of free memory") {
  const auto b = make_cuda_device(0);
  const arm_info *arm = find_arm("cuda", "layernorm.fused");
  REQUIRE(arm != nullptr);
  const operation_desc &op = operation_named("layernorm");
  const arm_spec spec{"f", "layernorm.fused", launch_mode::stream, 1};
  CHECK_FALSE(device_cannot_run(*b, op, *arm, spec, pass_kind::fwd_bwd, 1024, 1024, dtype::fp32)
                  .has_value());
  const auto why = device_cannot_run(*b, op, *arm, spec, pass_kind::fwd_bwd, std::int64_t{1} << 26,
                                     8192, dtype::fp32);
  REQUIRE(why.has_value());
  CHECK(why->find("the cuda device allows a cell") != std::string::npos);
  CHECK(why->find("GiB") != std::string::npos);
  // the registry's static limits
  const auto cols = cannot_run(*arm, pass_kind::fwd, 4, 900, dtype::fp32);
  REQUIRE(cols.has_value());
  CHECK(cols->find("multiple of 8") != std::string::npos);
}

namespace {

void check_run(const raw_run &raw, const run_plan &plan, const protocol &p) {
  CHECK(raw.instrument.ceiling_gbps > 0);
  CHECK(raw.instrument.ceiling_samples_gbps.size() >= 9);
  CHECK(raw.instrument.ceiling_bytes >= (std::uint64_t{1} << 30));
  CHECK(raw.instrument.launch_floor_ms > 0);
  CHECK(raw.instrument.timer_resolution_ms > 0);
  CHECK(raw.instrument.llc_bytes > 0);
  if (p.measurement.l2_flush) {
    CHECK(raw.instrument.flush_method == "read-sweep");
    CHECK(raw.instrument.flush_bytes >= 2 * raw.instrument.llc_bytes);
  }
  CHECK(raw.instrument.clock_start_mhz > 100);
  REQUIRE(raw.correctness.size() == plan.cells.size());
  for (std::size_t i = 0; i < raw.correctness.size(); ++i) {
    const correctness_record &c = raw.correctness[i];
    CHECK(c.key == plan.cells[i]); // plan order
    CAPTURE(c.key.arm);
    CAPTURE(to_string(c.key.pass));
    INFO(c.detail);
    CHECK(c.passed);
    CHECK_FALSE(c.unwritten);
  }
  REQUIRE(raw.cells.size() == plan.cells.size());
  for (std::size_t i = 0; i < raw.cells.size(); ++i) {
    const cell_record &c = raw.cells[i];
    CAPTURE(c.key.arm);
    CAPTURE(to_string(c.key.pass));
    CHECK(c.key == plan.cells[i]);
    CHECK_FALSE(c.error.has_value());
    CHECK(c.samples_ms.size() == static_cast<std::size_t>(p.measurement.repetitions));
    for (const double ms : c.samples_ms)
      CHECK(ms > 0);
    CHECK(c.clock_mhz > 100);
    CHECK(c.harness_bytes_in_window == 0);
    const auto spec = std::find_if(p.arms.begin(), p.arms.end(),
                                   [&](const arm_spec &a) { return a.id == c.key.arm; });
    REQUIRE(spec != p.arms.end());
    const arm_info *arm = find_arm("cuda", spec->kernel);
    REQUIRE(arm != nullptr);
    const bool allocates = c.key.pass == pass_kind::fwd_bwd
                               ? (arm->allocates_fwd || arm->allocates_bwd)
                               : arm->allocates_fwd;
    if (allocates)
      CHECK(c.peak_bytes > 0);
    else
      CHECK(c.peak_bytes == 0);
  }
}

} // namespace

TEST_CASE("a tiny layernorm plan: stream and graph launch, interleaved") {
  const protocol p = make_protocol("layernorm", dtype::fp16, {300}, {896},
                                   {{"fused", "layernorm.fused", launch_mode::stream, 1},
                                    {"unfused", "layernorm.unfused", launch_mode::stream, 1},
                                    {"lock_graph", "layernorm.lockgroup", launch_mode::graph, 2},
                                    {"fused_graph", "layernorm.fused", launch_mode::graph, 3}},
                                   5, 2);
  const run_plan plan = make_plan(p, 0x1234);
  quiet_progress progress;
  const raw_run raw = measure_on_cuda(plan, progress);
  check_run(raw, plan, p);
  CHECK(progress.done == plan.cells.size());
  CHECK(raw.environment.contains("device_name"));
  CHECK(raw.deviations.empty());
}

TEST_CASE("a tiny rmsnorm plan: bf16, sequential order, no flush") {
  protocol p = make_protocol("rmsnorm", dtype::bf16, {1, 257}, {8192},
                             {{"fused", "rmsnorm.fused", launch_mode::stream, 1},
                              {"unfused", "rmsnorm.unfused", launch_mode::graph, 1}},
                             4, 1);
  p.measurement.order = order_mode::sequential;
  p.measurement.l2_flush = false;
  const run_plan plan = make_plan(p, 99);
  quiet_progress progress;
  const raw_run raw = measure_on_cuda(plan, progress);
  check_run(raw, plan, p);
  CHECK(raw.instrument.flush_method == "none");
  CHECK(raw.instrument.flush_bytes == 0);
}

TEST_CASE("a tiny softmax plan through the engine: generic-seam arms, stream and graph launch") {
  const protocol p = make_protocol("softmax", dtype::fp16, {1, 300}, {1024},
                                   {{"fused", "softmax.fused", launch_mode::stream, 1},
                                    {"unfused", "softmax.unfused", launch_mode::stream, 1},
                                    {"fused_graph", "softmax.fused", launch_mode::graph, 3},
                                    {"unfused_graph", "softmax.unfused", launch_mode::graph, 2}},
                                   5, 2);
  const run_plan plan = make_plan(p, 0x50f7);
  quiet_progress progress;
  const raw_run raw = measure_on_cuda(plan, progress);
  check_run(raw, plan, p);
  CHECK(raw.deviations.empty());
}

TEST_CASE("the kernel clock times each sample's kernels on the H200 (CUPTI)") {
  const protocol p = make_protocol("layernorm", dtype::fp32, {4096}, {1024},
                                   {{"fused", "layernorm.fused", launch_mode::stream, 1},
                                    {"unfused", "layernorm.unfused", launch_mode::stream, 1},
                                    {"fused_graph", "layernorm.fused", launch_mode::graph, 2}},
                                   8, 2);
  const run_plan plan = make_plan(p, 0x77);
  quiet_progress progress;
  const raw_run raw = measure_on_cuda(plan, progress);
  check_run(raw, plan, p);
  INFO(raw.environment.value("kernel_clock", std::string("?")));
  REQUIRE_FALSE(raw.instrument.kernel_clock.empty()); // this machine has libcupti
  CHECK(raw.instrument.kernel_clock.find("CUPTI 13") == 0);
  CHECK(raw.instrument.kernel_clock_floor_ms > 0);
  CHECK(raw.instrument.kernel_records_dropped == 0);
  for (const cell_record &c : raw.cells) {
    CAPTURE(c.key.arm);
    CAPTURE(to_string(c.key.pass));
    REQUIRE(c.kernel_ms.size() == c.samples_ms.size());
    REQUIRE(c.kernel_counts.size() == c.samples_ms.size());
    // Kernels per step: fused fwd 1, its graph of 2 invocations 2, unfused fwd 3.
    const std::int64_t fwd_kernels = c.key.arm == "fused" ? 1 : c.key.arm == "fused_graph" ? 2 : 3;
    for (std::size_t i = 0; i < c.samples_ms.size(); ++i) {
      CHECK(c.kernel_ms[i] > 0);
      CHECK(c.kernel_ms[i] <= c.samples_ms[i] + raw.instrument.timer_resolution_ms);
      if (c.key.pass == pass_kind::fwd)
        CHECK(c.kernel_counts[i] == fwd_kernels);
      else
        CHECK(c.kernel_counts[i] > fwd_kernels);
    }
    REQUIRE_FALSE(c.kernel_names.empty());
    bool instrument_kernel = false;
    for (const auto &n : c.kernel_names) {
      CHECK(n.samples_ms.size() == c.samples_ms.size());
      instrument_kernel |= n.name.find("prereg_window") != std::string::npos ||
                           n.name.find("read_sweep") != std::string::npos ||
                           n.name.find("fill_kernel") != std::string::npos;
    }
    CHECK_FALSE(instrument_kernel); // marks, flush and fills are outside the window
    if (c.key.arm != "unfused" && c.key.pass == pass_kind::fwd) {
      REQUIRE(c.kernel_names.size() == 1);
      CHECK(c.kernel_names[0].name.find("ln_fused_fwd") != std::string::npos);
    }
  }
}
