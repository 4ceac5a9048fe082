// The instrument's record on the CUDA device (issue 35): NVML's state reader opens and reads
// plausible clocks, and a tiny plan under a stopping rule records one state per sample and a
// stop record per cell.
#include "device_helpers.hpp"

#include "spec/stop_rule.hpp"

#include <fmt/format.h>

#include <cmath>

using namespace prereg;
using namespace prereg::device_test;

TEST_CASE("the CUDA device reads its clocks, power and reasons through NVML") {
  const auto dev = make_cuda_device(0);
  (void)dev->probe();
  std::string why;
  const auto reader = dev->state_reader(why);
  REQUIRE_MESSAGE(reader, why);
  MESSAGE(*reader);
  const device_state_sample s = dev->read_state();
  CHECK(s.sm_mhz > 100.0);
  CHECK(s.sm_mhz < 5000.0);
  CHECK(s.mem_mhz > 100.0);
  CHECK(s.power_w > 1.0);
  CHECK(s.temp_c > 0.0);
  CHECK(s.reasons.has_value());
  MESSAGE(fmt::format("sm {} MHz, mem {} MHz, {} W, {} C, reasons 0x{:x}", s.sm_mhz, s.mem_mhz,
                      s.power_w, s.temp_c, s.reasons.value_or(0)));
}

TEST_CASE("a tiny layernorm plan under a stopping rule: a state per sample, a stop per cell") {
  protocol p = make_protocol("layernorm", dtype::fp32, {128, 4096}, {1024},
                             {{"fused", "layernorm.fused", launch_mode::stream, 1},
                              {"unfused", "layernorm.unfused", launch_mode::stream, 1}},
                             40, 3);
  p.schema = 2;
  p.measurement.stop = stop_spec{0.02, 10, 40, 5};
  const run_plan plan = make_plan(p, 0x35);
  quiet_progress progress;
  const raw_run raw = measure_on_cuda(plan, progress);
  REQUIRE(raw.environment.at("device_state").get<std::string>().rfind("NVML", 0) == 0);
  CHECK(raw.environment.at("device_state_read_ms").get<double>() > 0);
  for (const auto &c : raw.cells) {
    REQUIRE(c.stop);
    CHECK(c.states.size() == c.samples_ms.size());
    CHECK(c.samples_ms.size() >= 10);
    CHECK(c.samples_ms.size() <= 40);
    CHECK(stop_replay_problem(*p.measurement.stop, p.analysis.confidence,
                              stop_seed(plan.seed, c.key), c.samples_ms, *c.stop, false) == "");
    MESSAGE(fmt::format("{}: {} samples, {} (rel_ci {:g}), SM {}..{} MHz", cell_label(c.key),
                        c.samples_ms.size(), c.stop->reason, c.stop->rel_ci,
                        c.states.front().sm_mhz, c.states.back().sm_mhz));
  }
}
