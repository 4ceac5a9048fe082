// Tests of defect detection: each defect planted in a fake backend's raw run, one at a time.
#include "analysis/defects.hpp"
#include "prereg/error.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

using namespace prereg;

namespace {

protocol make_protocol() {
  protocol p;
  p.id = "t";
  p.device = "cpu";
  p.op = "layernorm";
  p.type = dtype::fp32;
  p.rows = {1024};
  p.cols = {1024};
  p.passes = {pass_kind::fwd, pass_kind::fwd_bwd};
  p.arms = {{"fused", "k.fused", launch_mode::stream, 1},
            {"unfused", "k.unfused", launch_mode::stream, 1}};
  p.measurement.repetitions = 12;
  p.correctness = {1e-5, 1e-5};
  return p;
}

// fused allocates only in its backward, unfused in both passes.
arm_info make_info(const std::string &name, bool fwd, bool bwd) {
  arm_info a;
  a.name = name;
  a.device = "cpu";
  a.op = "layernorm";
  a.dtypes = {dtype::fp32};
  a.passes = {pass_kind::fwd, pass_kind::fwd_bwd};
  a.has_backward = true;
  a.allocates_fwd = fwd;
  a.allocates_bwd = bwd;
  a.max_cols = 1 << 16;
  return a;
}
const arm_info fused_info = make_info("k.fused", false, true);
const arm_info unfused_info = make_info("k.unfused", true, true);

const arm_info *lookup(const arm_spec &arm) {
  if (arm.kernel == "k.fused")
    return &fused_info;
  if (arm.kernel == "k.unfused")
    return &unfused_info;
  return nullptr;
}

// No trend: ranks alternate around the middle. Median 0.02 ms; LayerNorm fp32 fwd 1024x1024
// moves 8404992 bytes: 420 GB/s, 42% of the 1000 GB/s ceiling.
std::vector<double> steady() {
  return {0.0200, 0.0203, 0.0198, 0.0201, 0.0199, 0.0202,
          0.0200, 0.0197, 0.0201, 0.0199, 0.0202, 0.0198};
}

// A clean run as a fake backend would record it.
raw_run make_run() {
  raw_run run;
  run.environment = {{"device_name", "fake"}, {"other_processes", json::array()}};
  run.instrument.ceiling_gbps = 1000;
  run.instrument.launch_floor_ms = 0.002;
  run.instrument.timer_resolution_ms = 0.00001;
  run.instrument.flush_bytes = 100000000;
  run.instrument.flush_method = "read-sweep";
  run.instrument.llc_bytes = 50000000;
  run.instrument.clock_start_mhz = 1980;
  for (const std::string arm : {"fused", "unfused"}) {
    for (const pass_kind pass : {pass_kind::fwd, pass_kind::fwd_bwd}) {
      cell_record c;
      c.key = {arm, pass, 1024, 1024};
      c.samples_ms = steady();
      if (pass == pass_kind::fwd_bwd) {
        for (auto &v : c.samples_ms)
          v *= 3;
      }
      c.peak_bytes = 4096;
      c.clock_mhz = 1950;
      run.cells.push_back(c);
      run.correctness.push_back({c.key, 1e-7, 1e-7, false, true, ""});
    }
  }
  return run;
}

std::vector<json> detect(const protocol &p, const raw_run &run) {
  std::vector<json> out;
  for (const auto &d : detect_defects(p, run, compute_cell_statistics(p, run), lookup))
    out.push_back(to_json(d));
  return out;
}

std::vector<std::string> codes_of(const std::vector<json> &defects) {
  std::vector<std::string> out;
  for (const auto &d : defects)
    out.push_back(d.at("code").get<std::string>());
  return out;
}

using codes = std::vector<std::string>;

bool all_finite(const json &j) {
  if (j.is_number_float())
    return std::isfinite(j.get<double>());
  if (j.is_structured()) {
    for (const auto &v : j) {
      if (!all_finite(v))
        return false;
    }
  }
  return true;
}

} // namespace

TEST_CASE("a clean run raises no defect") {
  const protocol p = make_protocol();
  const raw_run run = make_run();
  const auto stats = compute_cell_statistics(p, run);
  for (const auto &s : stats)
    CHECK(s.flags.empty());
  CHECK(detect(p, run).empty());
}

TEST_CASE("each planted defect raises exactly its code") {
  protocol p = make_protocol();
  raw_run run = make_run();
  SUBCASE("above-ceiling") {
    run.instrument.ceiling_gbps = 400; // fwd: 420 GB/s; fwd+bwd: 21008256 B in 0.06 ms = 350 GB/s
    const auto d = detect(p, run);
    CHECK(codes_of(d) == codes{"above-ceiling", "above-ceiling"});
    CHECK(d[0]["cell"] == json{{"arm", "fused"}, {"pass", "fwd"}, {"rows", 1024}, {"cols", 1024}});
    CHECK(d[0]["evidence"]["pct_ceiling"].get<double>() == doctest::Approx(105.0624));
    CHECK(d[0]["evidence"]["ceiling_gbps"] == 400.0);
    CHECK(d[1]["cell"]["arm"] == "unfused");
  }
  SUBCASE("unstable-cell") {
    run.cells[1].samples_ms = {0.06, 0.06, 0.06, 0.2, 0.2, 0.2};
    const auto d = detect(p, run);
    CHECK(codes_of(d) == codes{"unstable-cell"});
    CHECK(d[0]["cell"]["pass"] == "fwd+bwd");
    CHECK(d[0]["evidence"]["iqr_ms"].get<double>() == doctest::Approx(0.14));
    CHECK(d[0]["evidence"]["median_ms"].get<double>() == doctest::Approx(0.13));
    CHECK(d[0]["evidence"]["unstable_iqr_ratio"] == 0.5);
  }
  SUBCASE("harness-allocation") {
    run.cells[2].harness_bytes_in_window = 65536;
    const auto d = detect(p, run);
    CHECK(codes_of(d) == codes{"harness-allocation"});
    CHECK(d[0]["evidence"] == json{{"harness_bytes_in_window", 65536}});
  }
  SUBCASE("zero-peak-memory") {
    run.cells[0].peak_bytes = 0; // fused fwd: does not allocate, fine
    CHECK(detect(p, run).empty());
    run.cells[1].peak_bytes = 0; // fused fwd+bwd: allocates in bwd
    run.cells[2].peak_bytes = 0; // unfused fwd: allocates in fwd
    const auto d = detect(p, run);
    CHECK(codes_of(d) == codes{"zero-peak-memory", "zero-peak-memory"});
    CHECK(d[0]["cell"]["arm"] == "fused");
    CHECK(d[0]["cell"]["pass"] == "fwd+bwd");
    CHECK(d[1]["cell"]["arm"] == "unfused");
    CHECK(d[1]["evidence"]["kernel"] == "k.unfused");
  }
  SUBCASE("timer-resolution") {
    run.instrument.timer_resolution_ms = 0.002; // 20 x = 0.04 ms: catches the fwd cells only
    const auto d = detect(p, run);
    CHECK(codes_of(d) == codes{"timer-resolution", "timer-resolution"});
    CHECK(d[0]["evidence"]["threshold_ms"].get<double>() == doctest::Approx(0.04));
    CHECK(d[0]["cell"]["pass"] == "fwd");
    CHECK(d[1]["cell"]["pass"] == "fwd");
  }
  SUBCASE("clock-throttle") {
    run.cells[3].clock_mhz = 1700; // below 0.9 x 1980 = 1782
    const auto d = detect(p, run);
    CHECK(codes_of(d) == codes{"clock-throttle"});
    CHECK(d[0]["evidence"] == json{{"clock_mhz", 1700.0}, {"clock_start_mhz", 1980.0}});
  }
  SUBCASE("device-contention") {
    run.environment["other_processes"] = json::array({{{"pid", 4242}, {"name", "python"}}});
    const auto d = detect(p, run);
    CHECK(codes_of(d) == codes{"device-contention"});
    CHECK_FALSE(d[0].contains("cell"));
    CHECK(d[0]["evidence"]["other_processes"][0]["pid"] == 4242);
  }
  SUBCASE("drift") {
    for (std::size_t i = 0; i < 12; ++i)
      run.cells[0].samples_ms[i] = 0.0195 + 0.0001 * i;
    const auto d = detect(p, run);
    CHECK(codes_of(d) == codes{"drift"});
    CHECK(d[0]["evidence"] == json{{"spearman_rho", 1.0}, {"n", 12}});
  }
  SUBCASE("flush-too-small") {
    run.instrument.flush_bytes = 99999999; // under 2 x 50 MB
    const auto d = detect(p, run);
    CHECK(codes_of(d) == codes{"flush-too-small"});
    CHECK(d[0]["evidence"] == json{{"flush_bytes", 99999999}, {"llc_bytes", 50000000}});
  }
  SUBCASE("correctness-failure") {
    run.correctness[2].passed = false;
    run.correctness[2].max_abs_error = 0.5;
    run.correctness[2].max_rel_error = std::numeric_limits<double>::infinity();
    run.correctness[2].detail = "y[17]";
    const auto d = detect(p, run);
    CHECK(codes_of(d) == codes{"correctness-failure"});
    CHECK(d[0]["cell"]["arm"] == "unfused");
    CHECK(d[0]["evidence"]["max_abs_error"] == 0.5);
    CHECK(d[0]["evidence"]["max_rel_error"].is_null()); // not finite
    CHECK(d[0]["message"] ==
          "unfused fwd 1024x1024 is outside tolerance (max abs error 0.5, max rel error inf): "
          "y[17]");
  }
}

TEST_CASE("conditions that are not defects") {
  protocol p = make_protocol();
  raw_run run = make_run();
  SUBCASE("other processes unknown") { run.environment["other_processes"] = "unknown"; }
  SUBCASE("no flush asked for") {
    p.measurement.l2_flush = false;
    run.instrument.flush_bytes = 0;
  }
  SUBCASE("last-level cache size unknown") {
    run.instrument.llc_bytes = 0;
    run.instrument.flush_bytes = 1;
  }
  SUBCASE("clock unknown") {
    run.instrument.clock_start_mhz = std::nan("");
    run.cells[0].clock_mhz = 10;
  }
  SUBCASE("drift in fewer than ten samples") {
    run.cells[0].samples_ms = {0.0195, 0.0196, 0.0197, 0.0198, 0.0199,
                               0.02,   0.0201, 0.0202, 0.0203};
  }
  SUBCASE("zero peak in a cell without samples") {
    run.cells[2].samples_ms.clear();
    run.cells[2].error = "cannot allocate";
    run.cells[2].peak_bytes = 0;
  }
  SUBCASE("an arm the registry does not know") {
    p.arms[1].kernel = "k.other";
    run.cells[2].peak_bytes = 0;
  }
  CHECK(detect(p, run).empty());
}

TEST_CASE("defects come grouped by code in table order") {
  const protocol p = make_protocol();
  raw_run run = make_run();
  run.correctness[0].passed = false;
  run.instrument.flush_bytes = 1;
  for (std::size_t i = 0; i < 12; ++i)
    run.cells[3].samples_ms[i] = 0.06 + 0.001 * i;
  run.environment["other_processes"] = json::array({"pid 7"});
  run.cells[1].clock_mhz = 1000;
  run.cells[0].harness_bytes_in_window = 1;
  run.instrument.ceiling_gbps = 400;
  const auto d = detect(p, run);
  CHECK(codes_of(d) == codes{"above-ceiling", "above-ceiling", "harness-allocation",
                             "clock-throttle", "device-contention", "drift", "flush-too-small",
                             "correctness-failure"});
  // No defect holds a number the canonical serialiser would refuse.
  for (const auto &x : d)
    CHECK(all_finite(x));
}

TEST_CASE("which codes the audit derives from raw data") {
  const auto all = defect_codes();
  REQUIRE(all.size() == 19);
  CHECK(all.front() == "above-ceiling");
  CHECK(all[11] == "off-window-work");
  CHECK(all[14] == "no-arm-kernel");
  CHECK(all[15] == "graph-under-kernel-clock");
  CHECK(all[16] == "throttled");
  CHECK(all[17] == "measuring-process-stopped");
  CHECK(all.back() == "measuring-process-descheduled");
  codes derivable;
  for (const auto c : all) {
    if (derivable_from_raw(c))
      derivable.emplace_back(c);
  }
  CHECK(derivable == codes{"above-ceiling", "unstable-cell", "timer-resolution", "drift"});
}

TEST_CASE("statistics must match the run's cells") {
  const protocol p = make_protocol();
  const raw_run run = make_run();
  auto stats = compute_cell_statistics(p, run);
  std::swap(stats[0], stats[1]);
  CHECK_THROWS_AS(static_cast<void>(detect_defects(p, run, stats, lookup)), error);
  stats.pop_back();
  try {
    static_cast<void>(detect_defects(p, run, stats, lookup));
    FAIL("no error");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::failure);
  }
}

TEST_CASE("the guards' defects: input-mutated and off-window-work, at their thresholds") {
  const protocol p = make_protocol();
  raw_run run = make_run();
  // cells[0]: fused fwd, median 0.02 ms -> threshold max(0.05, 0.002) = 0.05 ms.
  // cells[1]: fused fwd+bwd, median 0.06 ms; cells[2]: unfused fwd.
  SUBCASE("pending work over both thresholds is a defect, under either is not") {
    run.cells[0].off_window_ms = 0.051;
    run.cells[1].off_window_ms = 0.049; // under 0.05 ms
    run.cells[2].off_window_ms = 0.0;
    const auto d = detect(p, run);
    REQUIRE(codes_of(d) == codes{"off-window-work"});
    CHECK(d[0].at("cell").at("arm") == "fused");
    CHECK(d[0].at("cell").at("pass") == "fwd");
    CHECK(d[0].at("message") == "fused fwd 1024x1024 left 0.051 ms of device work pending after "
                                "a timed window (median 0.02 ms)");
    CHECK(d[0].at("evidence").at("threshold_ms") == doctest::Approx(0.05));
    CHECK(d[0].at("evidence").at("median_ms") == doctest::Approx(0.02));
  }
  SUBCASE("a long cell needs pending work over 10% of its median") {
    for (auto &v : run.cells[0].samples_ms)
      v *= 100; // median 2 ms -> threshold 0.2 ms
    run.cells[0].off_window_ms = 0.15;
    CHECK(detect(p, run).empty());
    run.cells[0].off_window_ms = 0.25;
    CHECK(codes_of(detect(p, run)) == codes{"off-window-work"});
  }
  SUBCASE("unknown pending work (NaN, the cpu) raises nothing") {
    run.cells[0].off_window_ms = std::numeric_limits<double>::quiet_NaN();
    CHECK(detect(p, run).empty());
  }
  SUBCASE("a mutated input") {
    run.cells[3].input_mutated = "timed sample 2: x: element 1 (row 0, col 1) was 1 before the "
                                 "call and 2 after it";
    const auto d = detect(p, run);
    REQUIRE(codes_of(d) == codes{"input-mutated"});
    CHECK(d[0].at("cell").at("arm") == "unfused");
    CHECK(d[0].at("message") == "unfused fwd+bwd 1024x1024 changed an input inside a timed call: "
                                "timed sample 2: x: element 1 (row 0, col 1) was 1 before the "
                                "call and 2 after it");
    CHECK(d[0].at("evidence") == json{{"detail", *run.cells[3].input_mutated}});
  }
}

TEST_CASE("defects: the report schema names every code the analysis can write, with its evidence") {
  std::ifstream in(std::string(PREREG_SOURCE_DIR) + "/docs/schema/report.schema.json");
  REQUIRE(in);
  const auto schema = nlohmann::json::parse(in);
  const auto &defect = schema.at("$defs").at("defect");
  const auto &allowed = defect.at("properties").at("code").at("enum");
  for (const std::string_view code : defect_codes()) {
    CAPTURE(code);
    CHECK(std::find(allowed.begin(), allowed.end(), std::string(code)) != allowed.end());
  }
  CHECK(allowed.size() == defect_codes().size());
}
