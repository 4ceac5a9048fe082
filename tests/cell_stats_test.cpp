// Tests of per-cell statistics, `bound` and `flags`.
#include "analysis/cell_stats.hpp"
#include "prereg/error.hpp"
#include "report/report.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace prereg;

namespace {

protocol make_protocol() {
  protocol p;
  p.id = "t";
  p.device = "cpu";
  p.op = "layernorm";
  p.type = dtype::fp32;
  p.rows = {2};
  p.cols = {4};
  p.passes = {pass_kind::fwd};
  p.arms = {{"a", "layernorm.fused", launch_mode::stream, 1},
            {"b", "layernorm.unfused", launch_mode::stream, 2}};
  p.measurement.repetitions = 4;
  return p;
}

instrument_record make_instrument() {
  instrument_record ins;
  ins.ceiling_gbps = 1e-3; // 112 bytes in 0.1 ms = 1.12e-3 GB/s
  ins.launch_floor_ms = 0.001;
  ins.timer_resolution_ms = 0.0001;
  ins.clock_start_mhz = 1000;
  return ins;
}

cell_record make_cell(std::string arm, std::vector<double> samples) {
  cell_record c;
  c.key = {std::move(arm), pass_kind::fwd, 2, 4};
  c.samples_ms = std::move(samples);
  c.peak_bytes = 64;
  c.clock_mhz = 1000;
  return c;
}

} // namespace

TEST_CASE("cell statistics from samples") {
  protocol p = make_protocol();
  instrument_record ins = make_instrument();
  const cell_record cell = make_cell("a", {0.4, 0.1, 0.3, 0.2}); // sorted .1 .2 .3 .4
  SUBCASE("numbers") {
    const cell_statistics s = compute_cell_statistics(cell, p, ins, {});
    CHECK(s.key == cell.key);
    CHECK(s.n == 4);
    CHECK(s.median_ms == doctest::Approx(0.25));
    CHECK(s.q1_ms == doctest::Approx(0.175));
    CHECK(s.q3_ms == doctest::Approx(0.325));
    CHECK(s.iqr_ms == doctest::Approx(0.15));
    CHECK(s.mean_ms == doctest::Approx(0.25));
    CHECK(s.min_ms == 0.1);
    CHECK(s.statistic_ms == s.median_ms);
    CHECK(s.spearman_rho == doctest::Approx(-0.4)); // ranks 4 1 3 2: cov -2, var 5 and 5
    CHECK(s.peak_bytes == 64);
    CHECK(s.bytes_per_step == 112);
    CHECK(s.gbps == doctest::Approx(4.48e-4)); // 112 B / 0.25 ms
    CHECK(s.pct_ceiling == doctest::Approx(44.8));
    CHECK(s.unstable); // IQR/median = 0.6 > 0.5
    CHECK(s.bound == bound_kind::neither);
    CHECK(s.flags == std::vector<std::string>{"unstable"});
  }
  SUBCASE("a looser threshold makes it stable") {
    p.analysis.unstable_iqr_ratio = 0.6;
    const cell_statistics s = compute_cell_statistics(cell, p, ins, {});
    CHECK_FALSE(s.unstable);
    CHECK(s.flags.empty());
  }
  SUBCASE("gbps follows the protocol's statistic") {
    p.analysis.statistic = statistic_kind::min;
    const cell_statistics s = compute_cell_statistics(cell, p, ins, {});
    CHECK(s.statistic_ms == 0.1);
    CHECK(s.gbps == doctest::Approx(1.12e-3));
    CHECK(s.pct_ceiling == doctest::Approx(112.0));
    CHECK(s.flags == std::vector<std::string>{"unstable", "above-ceiling"});
  }
  SUBCASE("launch bound scales with repeat") {
    ins.launch_floor_ms = 0.1; // limit 0.2 ms for repeat 1, 0.4 ms for repeat 2
    CHECK(compute_cell_statistics(cell, p, ins, {}).bound == bound_kind::neither);
    const cell_record b = make_cell("b", {0.4, 0.1, 0.3, 0.2});
    const cell_statistics s = compute_cell_statistics(b, p, ins, {});
    CHECK(s.bytes_per_step == 224);
    CHECK(s.bound == bound_kind::launch);
  }
  SUBCASE("bandwidth bound at 60% of the ceiling") {
    ins.ceiling_gbps = 7e-4; // 4.48e-4 / 7e-4 = 64%
    CHECK(compute_cell_statistics(cell, p, ins, {}).bound == bound_kind::bandwidth);
    ins.ceiling_gbps = 8e-4; // 56%
    CHECK(compute_cell_statistics(cell, p, ins, {}).bound == bound_kind::neither);
  }
  SUBCASE("unknown launch floor and ceiling") {
    ins.launch_floor_ms = 0;
    ins.ceiling_gbps = 0;
    const cell_statistics s = compute_cell_statistics(cell, p, ins, {});
    CHECK(std::isnan(s.pct_ceiling));
    CHECK(s.bound == bound_kind::neither);
  }
}

TEST_CASE("flags come in the documented order") {
  const protocol p = make_protocol();
  instrument_record ins = make_instrument();
  SUBCASE("a failed cell without samples") {
    cell_record c = make_cell("a", {});
    c.error = "out of memory";
    const cell_statistics s = compute_cell_statistics(c, p, ins, {});
    CHECK(s.n == 0);
    CHECK(std::isnan(s.median_ms));
    CHECK(std::isnan(s.gbps));
    CHECK_FALSE(s.unstable);
    CHECK(s.bound == bound_kind::neither);
    CHECK(s.flags == std::vector<std::string>{"error", "no-samples"});
    const json j = to_json(to_report_cell(c, s));
    CHECK(j["median_ms"].is_null());
    CHECK(j["gbps"].is_null());
    CHECK(j["error"] == "out of memory");
    CHECK(j["flags"] == json::array({"error", "no-samples"}));
  }
  SUBCASE("many at once") {
    std::vector<double> rising;
    for (int i = 0; i < 12; ++i)
      rising.push_back(1.0 + 0.01 * i);
    cell_record c = make_cell("a", rising);
    c.clock_mhz = 899; // below 0.9 x 1000
    c.harness_bytes_in_window = 10;
    ins.timer_resolution_ms = 0.1; // 20 x 0.1 = 2 ms > median 1.055 ms
    const std::vector<correctness_record> checks{
        {{"a", pass_kind::fwd, 2, 4}, 1.0, 1.0, false, false, "y[0]"}};
    const cell_statistics s = compute_cell_statistics(c, p, ins, checks);
    CHECK(s.spearman_rho == 1.0);
    CHECK(s.flags == std::vector<std::string>{"correctness-failure", "timer-resolution", "drift",
                                              "clock-throttle", "harness-allocation"});
  }
  SUBCASE("drift needs ten samples") {
    std::vector<double> rising;
    for (int i = 0; i < 9; ++i)
      rising.push_back(1.0 + 0.01 * i);
    const cell_statistics s = compute_cell_statistics(make_cell("a", rising), p, ins, {});
    CHECK(s.spearman_rho == 1.0);
    CHECK(s.flags.empty());
  }
  SUBCASE("a clock at 90% is not throttled") {
    cell_record c = make_cell("a", {1.0, 1.0});
    c.clock_mhz = 900;
    CHECK(compute_cell_statistics(c, p, ins, {}).flags.empty());
    c.clock_mhz = std::nan("");
    CHECK(compute_cell_statistics(c, p, ins, {}).flags.empty());
  }
}

TEST_CASE("unstable threshold") {
  CHECK(is_unstable(0.6, 1.0, 0.5));
  CHECK_FALSE(is_unstable(0.5, 1.0, 0.5));
  CHECK_FALSE(is_unstable(0.0, 0.0, 0.5));
  CHECK(is_unstable(1.0, 0.0, 0.5));
  CHECK_FALSE(is_unstable(std::nan(""), std::nan(""), 0.5));
}

TEST_CASE("a cell of an arm the protocol lacks is refused") {
  try {
    static_cast<void>(
        compute_cell_statistics(make_cell("zz", {1.0}), make_protocol(), make_instrument(), {}));
    FAIL("no error");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::invalid);
    CHECK(std::string(e.what()) == "cell names arm 'zz', which the protocol lacks");
  }
}

TEST_CASE("every cell of a run, in order") {
  raw_run run;
  run.instrument = make_instrument();
  run.cells = {make_cell("b", {1.0}), make_cell("a", {2.0})};
  const auto all = compute_cell_statistics(make_protocol(), run);
  REQUIRE(all.size() == 2);
  CHECK(all[0].key.arm == "b");
  CHECK(all[0].median_ms == 1.0);
  CHECK(all[1].key.arm == "a");
  CHECK(all[1].median_ms == 2.0);
  const json j = to_json(to_report_cell(run.cells[0], all[0]));
  CHECK(j["arm"] == "b");
  CHECK(j["pass"] == "fwd");
  CHECK(j["samples_ms"] == json::array({1.0}));
  CHECK(j["bound"] == "neither");
  CHECK(j["error"].is_null());
  CHECK(j["harness_bytes_in_window"] == 0);
  CHECK(j["clock_mhz"] == 1000.0);
  const json v1 = to_json(to_report_cell(run.cells[0], all[0], 1));
  CHECK_FALSE(v1.contains("clock_mhz"));
  CHECK_FALSE(v1.contains("harness_bytes_in_window"));
}

TEST_CASE("region shares: point, interval, seeded, and refused when malformed") {
  const protocol p = make_protocol();
  cell_record c = make_cell("a", {1.0, 2.0, 1.0, 2.0});
  c.regions_ms["x"] = {0.5, 0.5, 0.5, 0.5}; // 2 of 6 ms
  c.regions_ms["y"] = {0.0, 1.0, 0.0, 1.0}; // 2 of 6 ms, all in the slow samples
  const auto st = compute_cell_statistics(c, p, make_instrument(), {});
  REQUIRE(st.region_shares.size() == 2);
  CHECK(st.region_shares[0].label == "x");
  CHECK(st.region_shares[0].share_pct == doctest::Approx(100.0 / 3));
  CHECK(st.region_shares[1].share_pct == doctest::Approx(100.0 / 3));
  for (const auto &r : st.region_shares) {
    CHECK(r.lo_pct <= r.share_pct);
    CHECK(r.share_pct <= r.hi_pct);
  }
  // x's share is 0.5/1 = 50% in a fast sample and 25% in a slow one: resamples spread it
  CHECK(st.region_shares[0].lo_pct < st.region_shares[0].hi_pct);
  CHECK(st.region_shares[0].lo_pct >= 25.0);
  CHECK(st.region_shares[0].hi_pct <= 50.0);
  // the same cell gives the same interval (the seed is the cell key and label)
  const auto again = compute_cell_statistics(c, p, make_instrument(), {});
  CHECK(again.region_shares == st.region_shares);
  // no regions: no shares, and the report cell carries neither field
  const cell_record plain = make_cell("a", {1.0, 2.0, 1.0, 2.0});
  const auto ps = compute_cell_statistics(plain, p, make_instrument(), {});
  CHECK(ps.region_shares.empty());
  const json j = to_json(to_report_cell(plain, ps));
  CHECK_FALSE(j.contains("regions"));
  CHECK_FALSE(j.contains("region_shares"));
  const json jr = to_json(to_report_cell(c, st));
  CHECK(jr.at("regions").at("x").size() == 4);
  CHECK(jr.at("region_shares").at("y").at("share_pct").get<double>() == doctest::Approx(100.0 / 3));
  // malformed: one time too few; a negative time
  cell_record shortc = c;
  shortc.regions_ms["x"].pop_back();
  CHECK_THROWS_AS((void)compute_cell_statistics(shortc, p, make_instrument(), {}), error);
  cell_record neg = c;
  neg.regions_ms["x"][0] = -1.0;
  CHECK_THROWS_AS((void)compute_cell_statistics(neg, p, make_instrument(), {}), error);
}

TEST_CASE("region shares by the kernel clock: the kernels' share of the step's kernel time") {
  const protocol p = make_protocol();
  cell_record c = make_cell("a", {1.0, 2.0, 1.0, 2.0});
  c.kernel_ms = {0.2, 0.2, 0.2, 0.2}; // 0.8 ms of kernels in 6 ms of steps
  c.kernel_counts = {2, 2, 2, 2};
  c.regions_ms["x"] = {0.5, 0.5, 0.5, 0.5}; // events: a third of the step
  c.regions_ms["y"] = {0.0, 1.0, 0.0, 1.0};
  c.region_kernels_ms["x"] = {0.05, 0.05, 0.05, 0.05}; // kernels: a quarter of the kernel time
  const auto st = compute_cell_statistics(c, p, make_instrument(), {});
  REQUIRE(st.region_shares.size() == 2);
  const region_share &x = st.region_shares[0];
  CHECK(x.kernel);
  CHECK(x.share_pct == doctest::Approx(100.0 / 3));
  CHECK(x.kernel_share_pct == doctest::Approx(25.0));
  CHECK(x.kernel_lo_pct == doctest::Approx(25.0)); // constant ratio: every resample agrees
  CHECK(x.kernel_hi_pct == doctest::Approx(25.0));
  CHECK_FALSE(st.region_shares[1].kernel); // y has no kernel times: events only
  // the events' interval is the one computed without the kernel clock (the same draws)
  cell_record events_only = c;
  events_only.region_kernels_ms.clear();
  const auto eo = compute_cell_statistics(events_only, p, make_instrument(), {});
  CHECK(eo.region_shares[0].lo_pct == st.region_shares[0].lo_pct);
  CHECK(eo.region_shares[0].hi_pct == st.region_shares[0].hi_pct);
  // in the report cell and back
  const json j = to_json(to_report_cell(c, st));
  CHECK(j.at("region_kernels").at("x").size() == 4);
  CHECK_FALSE(j.at("region_kernels").contains("y"));
  CHECK(j.at("region_shares").at("x").at("kernel_share_pct").get<double>() ==
        doctest::Approx(25.0));
  CHECK_FALSE(j.at("region_shares").at("y").contains("kernel_share_pct"));
  // refused: kernel times of a region without event times; one kernel time too few
  cell_record orphan = c;
  orphan.region_kernels_ms["z"] = {0.0, 0.0, 0.0, 0.0};
  CHECK_THROWS_AS((void)compute_cell_statistics(orphan, p, make_instrument(), {}), error);
  cell_record shortk = c;
  shortk.region_kernels_ms["x"].pop_back();
  CHECK_THROWS_AS((void)compute_cell_statistics(shortk, p, make_instrument(), {}), error);
  cell_record noclock = c;
  noclock.kernel_ms.clear();
  noclock.kernel_counts.clear();
  CHECK_THROWS_AS((void)compute_cell_statistics(noclock, p, make_instrument(), {}), error);
}
