// Tests of the decision rule: seeded bootstrap p per cell and the verdict it gives.
#include "analysis/verdict.hpp"
#include "base/stats.hpp"
#include "prereg/error.hpp"
#include "spec/bytes_model.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <string>

using namespace prereg;

namespace {

const std::string hash_a(64, 'a');
const std::string hash_b = "0123456789abcdef" + std::string(48, '0');

protocol make_protocol() {
  protocol p;
  p.id = "t";
  p.device = "cpu";
  p.op = "layernorm";
  p.type = dtype::fp32;
  p.rows = {128, 256};
  p.cols = {1024};
  p.passes = {pass_kind::fwd};
  p.arms = {{"a", "layernorm.fused", launch_mode::stream, 1},
            {"b", "layernorm.unfused", launch_mode::stream, 2}};
  p.analysis.bootstrap_resamples = 1000;
  p.predictions = {{"P1", "a is slower", {{128, 256}, {1024}, {pass_kind::fwd}}, "a > b"}};
  return p;
}

void put(raw_run &run, const std::string &arm, std::int64_t rows, std::vector<double> samples) {
  cell_record c;
  c.key = {arm, pass_kind::fwd, rows, 1024};
  c.samples_ms = std::move(samples);
  c.peak_bytes = 3000000;
  run.cells.push_back(c);
  run.correctness.push_back({c.key, 0, 0, false, true, ""});
}

// a near 2 ms and b near 1 ms at both shapes.
raw_run make_run() {
  raw_run run;
  run.instrument.ceiling_gbps = 10;
  for (const std::int64_t rows : {128, 256}) {
    put(run, "a", rows, {2.0, 2.1, 1.9, 2.0, 2.05});
    put(run, "b", rows, {1.0, 1.1, 0.9, 1.0, 1.05});
  }
  return run;
}

// `x > y` on time.
prediction_check slower(const std::string &x, const std::string &y) {
  return {[=](const metric_lookup &v) {
            return v({metric::time, x}) > v({metric::time, y});
          },
          {{metric::time, x}, {metric::time, y}}};
}

// `x < y` on time.
prediction_check faster(const std::string &x, const std::string &y) {
  return {[=](const metric_lookup &v) {
            return v({metric::time, x}) < v({metric::time, y});
          },
          {{metric::time, x}, {metric::time, y}}};
}

prediction_result judge(const protocol &p, const prediction_check &check, const raw_run &run,
                        const std::string &hash = hash_a) {
  rng gen(bootstrap_seed(hash));
  return evaluate_prediction(p, p.predictions.at(0), check, run, gen);
}

std::vector<std::optional<double>> ps(const prediction_result &r) {
  std::vector<std::optional<double>> out;
  for (const auto &c : r.cells)
    out.push_back(c.p);
  return out;
}

} // namespace

TEST_CASE("the bootstrap seed comes from the protocol hash") {
  CHECK(bootstrap_seed(hash_b) == 0x743c9bfffd130ae6ULL);
}

TEST_CASE("confirmed: p >= confidence in every selected cell") {
  const auto r = judge(make_protocol(), slower("a", "b"), make_run());
  CHECK(r.verdict == verdict_kind::confirmed);
  REQUIRE(r.cells.size() == 2);
  CHECK(r.cells[0].rows == 128);
  CHECK(r.cells[1].rows == 256);
  CHECK(ps(r) == std::vector<std::optional<double>>{1.0, 1.0});
  CHECK(r.reason == "p >= 0.95 in every selected cell (2)");
  CHECK(r.id == "P1");
  CHECK(r.expect == "a > b");
}

TEST_CASE("refuted: p <= 1 - confidence in a stable, correct cell") {
  const auto r = judge(make_protocol(), slower("b", "a"), make_run());
  CHECK(r.verdict == verdict_kind::refuted);
  CHECK(ps(r) == std::vector<std::optional<double>>{0.0, 0.0});
  CHECK(r.reason == "p = 0 <= 0.05 at fwd 128x1024; p = 0 <= 0.05 at fwd 256x1024");
}

TEST_CASE("a conjunction over cells fails if one cell refutes") {
  raw_run run = make_run();
  run.cells[0].samples_ms = {0.5, 0.5, 0.5}; // a at 128 now faster than b
  const auto r = judge(make_protocol(), slower("a", "b"), run);
  CHECK(r.verdict == verdict_kind::refuted);
  CHECK(ps(r) == std::vector<std::optional<double>>{0.0, 1.0});
  CHECK(r.reason == "p = 0 <= 0.05 at fwd 128x1024");
}

TEST_CASE("inconclusive: p between the thresholds") {
  protocol p = make_protocol();
  p.analysis.unstable_iqr_ratio = 0.75; // a = {1, 3}: IQR/median = 1/2
  p.predictions[0].at.rows = {128};
  raw_run run = make_run();
  run.cells[0].samples_ms = {1.0, 3.0};
  run.cells[1].samples_ms = {2.0};
  // The resampled median of a is below 2 only when both draws are 1: probability 1/4.
  const auto r = judge(p, faster("a", "b"), run);
  CHECK(r.verdict == verdict_kind::inconclusive);
  REQUIRE(r.cells.size() == 1);
  REQUIRE(r.cells[0].p.has_value());
  CHECK(*r.cells[0].p > 0.2);
  CHECK(*r.cells[0].p < 0.3);
  CHECK(r.reason ==
        fmt::format("p = {:g} at fwd 128x1024 is between 0.05 and 0.95", *r.cells[0].p));
}

TEST_CASE("an unstable cell makes the prediction inconclusive") {
  raw_run run = make_run();
  run.cells[2].samples_ms = {3.0, 3.0, 30.0, 30.0}; // a at 256: IQR 27, median 16.5
  const auto r = judge(make_protocol(), slower("a", "b"), run);
  CHECK(r.verdict == verdict_kind::inconclusive);
  CHECK(ps(r) == std::vector<std::optional<double>>{1.0, 1.0}); // p is still reported
  CHECK(r.reason == "arm a is unstable at fwd 256x1024 (IQR/median = 1.63636 > 0.5)");
}

TEST_CASE("an involved arm that failed correctness makes it inconclusive") {
  raw_run run = make_run();
  run.correctness[3].passed = false; // b at 256
  run.correctness[3].detail = "dx[3]";
  SUBCASE("even where every p confirms") {
    const auto r = judge(make_protocol(), slower("a", "b"), run);
    CHECK(r.verdict == verdict_kind::inconclusive);
    CHECK(r.reason == "arm b failed correctness at fwd 256x1024 (dx[3])");
  }
  SUBCASE("even where a usable cell refutes") {
    const auto r = judge(make_protocol(), slower("b", "a"), run);
    CHECK(r.verdict == verdict_kind::inconclusive);
    CHECK(r.reason == "arm b failed correctness at fwd 256x1024 (dx[3]); a usable cell alone "
                      "would refute: p = 0 <= 0.05 at fwd 128x1024");
  }
  SUBCASE("an arm the prediction does not read does not matter") {
    protocol p = make_protocol();
    const prediction_check only_a{[](const metric_lookup &v) {
                                    return v({metric::time, "a"}) > 1.5;
                                  },
                                  {{metric::time, "a"}}};
    CHECK(judge(p, only_a, run).verdict == verdict_kind::confirmed);
  }
  SUBCASE("a missing correctness check") {
    run.correctness.pop_back();
    const auto r = judge(make_protocol(), slower("a", "b"), run);
    CHECK(r.verdict == verdict_kind::inconclusive);
    CHECK(r.reason == "arm b has no correctness check at fwd 256x1024");
  }
}

TEST_CASE("an arm without samples gives no p") {
  raw_run run = make_run();
  SUBCASE("cannot run") {
    run.cells.pop_back(); // b at 256
    const auto r = judge(make_protocol(), slower("a", "b"), run);
    CHECK(r.verdict == verdict_kind::inconclusive);
    CHECK(ps(r) == std::vector<std::optional<double>>{1.0, std::nullopt});
    CHECK(r.reason == "arm b has no measurement at fwd 256x1024 (cannot run)");
  }
  SUBCASE("failed during measurement") {
    run.cells[3].samples_ms.clear();
    run.cells[3].error = "out of memory";
    const auto r = judge(make_protocol(), slower("a", "b"), run);
    CHECK(r.verdict == verdict_kind::inconclusive);
    CHECK_FALSE(r.cells[1].p.has_value());
    CHECK(r.reason == "arm b failed at fwd 256x1024: out of memory; arm b has no samples at fwd "
                      "256x1024");
  }
}

TEST_CASE("metrics given to the predicate") {
  protocol p = make_protocol();
  p.predictions[0].at.rows = {128};
  raw_run run = make_run();
  run.cells[0].samples_ms = {0.5, 0.5, 0.5};
  run.cells[1].samples_ms = {0.25};
  run.cells[1].peak_bytes = 1500000;
  std::vector<double> seen;
  const prediction_check check{[&](const metric_lookup &v) {
                                 seen = {v({metric::time, "a"}),        v({metric::gbps, "a"}),
                                         v({metric::pct_ceiling, "a"}), v({metric::peak_mb, "a"}),
                                         v({metric::gbps, "b"}),        v({metric::peak_mb, "b"})};
                                 return true;
                               },
                               {{metric::time, "a"},
                                {metric::gbps, "a"},
                                {metric::pct_ceiling, "a"},
                                {metric::peak_mb, "a"},
                                {metric::gbps, "b"},
                                {metric::peak_mb, "b"}}};
  const auto r = judge(p, check, run);
  CHECK(r.verdict == verdict_kind::confirmed);
  REQUIRE(seen.size() == 6);
  // LayerNorm fp32 fwd 128x1024: 2 * 524288 + 2 * 4096 + 2 * 512 = 1057792 bytes.
  CHECK(seen[0] == 0.5);
  CHECK(seen[1] == doctest::Approx(2.115584));
  CHECK(seen[2] == doctest::Approx(21.15584)); // of 10 GB/s
  CHECK(seen[3] == 3.0);
  CHECK(seen[4] == doctest::Approx(2 * 1057792 / 0.25e-3 / 1e9)); // repeat 2
  CHECK(seen[5] == 1.5);
}

TEST_CASE("resampling follows the documented order") {
  protocol p = make_protocol();
  p.analysis.statistic = statistic_kind::mean;
  p.analysis.bootstrap_resamples = 7;
  p.predictions[0].at.rows = {128};
  p.predictions.push_back({"P2", "b is faster", {{128}, {1024}, {pass_kind::fwd}}, "b < a"});
  raw_run run = make_run();
  run.cells[0].samples_ms = {1.0, 2.0, 4.0};
  run.cells[1].samples_ms = {2.0, 3.5};
  const std::vector<double> &a = run.cells[0].samples_ms;
  const std::vector<double> &b = run.cells[1].samples_ms;

  // A re-implementation: one generator; predictions, then resamples, then arms in first-use
  // order, then sample indices.
  rng gen(bootstrap_seed(hash_b));
  const auto draw_mean = [&](const std::vector<double> &s) {
    double sum = 0;
    for (std::size_t i = 0; i < s.size(); ++i)
      sum += s[gen.below(s.size())];
    return sum / static_cast<double>(s.size());
  };
  int hits1 = 0;
  for (int k = 0; k < 7; ++k) {
    const double ta = draw_mean(a);
    const double tb = draw_mean(b);
    hits1 += ta > tb ? 1 : 0;
  }
  int hits2 = 0;
  for (int k = 0; k < 7; ++k) {
    const double tb = draw_mean(b); // P2 reads b first
    const double ta = draw_mean(a);
    hits2 += tb < ta ? 1 : 0;
  }

  const std::vector<prediction_check> checks{slower("a", "b"), faster("b", "a")};
  const auto results = evaluate_predictions(p, hash_b, checks, run);
  REQUIRE(results.size() == 2);
  CHECK(results[0].cells[0].p == hits1 / 7.0);
  CHECK(results[1].cells[0].p == hits2 / 7.0);
  CHECK(hits1 > 0); // the data leaves room for both outcomes
  CHECK(hits1 < 7);
}

TEST_CASE("the same inputs give the same p, bit for bit") {
  protocol p = make_protocol();
  p.analysis.unstable_iqr_ratio = 0.75;
  raw_run run = make_run();
  for (const std::size_t i : {0, 2})
    run.cells[i].samples_ms = {1.0, 3.0, 1.5, 2.5, 2.0};
  for (const std::size_t i : {1, 3})
    run.cells[i].samples_ms = {2.0, 2.1, 1.9};
  const std::vector<prediction_check> checks{faster("a", "b")};
  const auto first = evaluate_predictions(p, hash_a, checks, run);
  const auto second = evaluate_predictions(p, hash_a, checks, run);
  REQUIRE(first[0].cells.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    REQUIRE(first[0].cells[i].p.has_value());
    CHECK(std::bit_cast<std::uint64_t>(*first[0].cells[i].p) ==
          std::bit_cast<std::uint64_t>(*second[0].cells[i].p));
  }
  CHECK(first[0].reason == second[0].reason);
  // The two cells hold the same samples but draw different resamples from the one stream.
  CHECK(first[0].cells[0].p != first[0].cells[1].p);
  // Another protocol hash draws other resamples.
  const auto other = evaluate_predictions(p, hash_b, checks, run);
  CHECK(other[0].cells[0].p != first[0].cells[0].p);
}

TEST_CASE("predictions as report JSON") {
  raw_run run = make_run();
  run.cells.pop_back();
  const auto r = judge(make_protocol(), slower("a", "b"), run);
  const json j = to_json(r);
  CHECK(j["id"] == "P1");
  CHECK(j["claim"] == "a is slower");
  CHECK(j["expect"] == "a > b");
  CHECK(j["verdict"] == "inconclusive");
  CHECK(j["cells"] == json::parse(R"([{"pass":"fwd","rows":128,"cols":1024,"p":1.0},
                                       {"pass":"fwd","rows":256,"cols":1024,"p":null}])"));
  CHECK(j["reason"] == r.reason);
}

TEST_CASE("bad inputs") {
  protocol p = make_protocol();
  SUBCASE("an arm the protocol lacks") {
    try {
      static_cast<void>(judge(p, slower("a", "zz"), make_run()));
      FAIL("no error");
    } catch (const error &e) {
      CHECK(e.code() == exit_code::invalid);
      CHECK(std::string(e.what()) == "prediction P1 reads arm 'zz', which the protocol lacks");
    }
  }
  SUBCASE("no resamples") {
    p.analysis.bootstrap_resamples = 0;
    CHECK_THROWS_WITH(static_cast<void>(judge(p, slower("a", "b"), make_run())),
                      "bootstrap_resamples 0 is below 1");
  }
  SUBCASE("one check per prediction") {
    CHECK_THROWS_AS(static_cast<void>(evaluate_predictions(p, hash_a, {}, make_run())), error);
  }
  SUBCASE("no cell selected") {
    p.predictions[0].at.rows.clear();
    const auto r = judge(p, slower("a", "b"), make_run());
    CHECK(r.verdict == verdict_kind::inconclusive);
    CHECK(r.reason == "no cell selected");
  }
}

TEST_CASE("kernel metrics: read with the samples' own draws, inconclusive without a kernel clock") {
  const protocol p = make_protocol();
  raw_run run = make_run();
  // `gap_share(a) > 50 and a > b`: a's kernels take 40% of each step.
  const prediction_check gap{[](const metric_lookup &v) {
                               return v({metric::gap_share, "a"}) > 50.0 &&
                                      v({metric::time, "a"}) > v({metric::time, "b"});
                             },
                             {{metric::gap_share, "a"}, {metric::time, "a"}, {metric::time, "b"}}};
  SUBCASE("no kernel facts: inconclusive, naming the missing clock") {
    const auto r = judge(p, gap, run);
    CHECK(r.verdict == verdict_kind::inconclusive);
    CHECK(r.reason.find("arm a has no kernel clock at fwd 128x1024") != std::string::npos);
  }
  SUBCASE("with kernel facts: confirmed, and a time-only prediction's p values are unchanged") {
    const auto before = ps(judge(p, slower("a", "b"), run));
    for (auto &c : run.cells) {
      for (const double s : c.samples_ms) {
        c.kernel_ms.push_back(0.4 * s);
        c.kernel_counts.push_back(1);
      }
    }
    CHECK(judge(p, gap, run).verdict == verdict_kind::confirmed);
    CHECK(ps(judge(p, slower("a", "b"), run)) == before);
    const prediction_check count{[](const metric_lookup &v) {
                                   return v({metric::kernels, "a"}) >= 2.0;
                                 },
                                 {{metric::kernels, "a"}}};
    CHECK(judge(p, count, run).verdict == verdict_kind::refuted);
    const prediction_check ktime{
        [](const metric_lookup &v) {
          return v({metric::kernel_time, "a"}) < 0.5 * v({metric::time, "a"});
        },
        {{metric::kernel_time, "a"}, {metric::time, "a"}}};
    CHECK(judge(p, ktime, run).verdict == verdict_kind::confirmed);
  }
}

TEST_CASE("share(arm, label) resamples the region with the arm's sample indices") {
  protocol p = make_protocol();
  p.predictions[0].at.rows = {128};
  raw_run run = make_run();
  // region = 0.4 x the sample in every sample: every resample's share is 40.
  run.cells[0].regions_ms["attn"] = {0.8, 0.84, 0.76, 0.8, 0.82};
  std::vector<double> seen;
  const prediction_check check{[&](const metric_lookup &v) {
                                 seen.push_back(v({metric::share, "a", "attn"}));
                                 return v({metric::share, "a", "attn"}) > 39.9;
                               },
                               {{metric::share, "a", "attn"}}};
  const auto r = judge(p, check, run);
  CHECK(r.verdict == verdict_kind::confirmed);
  REQUIRE(!seen.empty());
  for (const double v : seen)
    CHECK(v == doctest::Approx(40.0));

  // a share read does not change the draws of a time read beside it
  const auto t_only = judge(p, slower("a", "b"), run);
  const prediction_check both{
      [&](const metric_lookup &v) {
        return v({metric::time, "a"}) > v({metric::time, "b"}) &&
               v({metric::share, "a", "attn"}) >= 0;
      },
      {{metric::time, "a"}, {metric::time, "b"}, {metric::share, "a", "attn"}}};
  CHECK(ps(judge(p, both, run)) == ps(t_only));
}

TEST_CASE(
    "kernel_share(arm, label) resamples the region's kernels against the cell's kernel time") {
  protocol p = make_protocol();
  p.predictions[0].at.rows = {128};
  raw_run run = make_run();
  cell_record &c = run.cells[0];
  c.regions_ms["attn"] = {0.8, 0.84, 0.76, 0.8, 0.82};
  c.kernel_ms.clear();
  c.kernel_counts.clear();
  for (const double s : c.samples_ms) {
    c.kernel_ms.push_back(0.5 * s);
    c.kernel_counts.push_back(3);
  }
  // the region's kernels: a quarter of the cell's kernel time in every sample
  for (const double k : c.kernel_ms)
    c.region_kernels_ms["attn"].push_back(0.25 * k);
  std::vector<double> seen;
  const prediction_check check{[&](const metric_lookup &v) {
                                 seen.push_back(v({metric::kernel_share, "a", "attn"}));
                                 return v({metric::kernel_share, "a", "attn"}) < 30;
                               },
                               {{metric::kernel_share, "a", "attn"}}};
  CHECK(judge(p, check, run).verdict == verdict_kind::confirmed);
  REQUIRE(!seen.empty());
  for (const double v : seen)
    CHECK(v == doctest::Approx(25.0));
  // a region the events timed but the clock did not: inconclusive, naming it
  c.region_kernels_ms.clear();
  const auto r = judge(p, check, run);
  CHECK(r.verdict == verdict_kind::inconclusive);
  CHECK(r.reason.find("arm a has no kernel time for region \"attn\" at fwd 128x1024") !=
        std::string::npos);
  // no kernel clock at all: inconclusive too
  c.kernel_ms.clear();
  c.kernel_counts.clear();
  CHECK(judge(p, check, run).verdict == verdict_kind::inconclusive);
}

TEST_CASE("a share of a region the arm did not mark is inconclusive, naming it") {
  protocol p = make_protocol();
  p.predictions[0].at.rows = {128};
  raw_run run = make_run();
  run.cells[0].regions_ms["attn"] = {0.8, 0.84, 0.76, 0.8, 0.82};
  const prediction_check check{[&](const metric_lookup &v) {
                                 return v({metric::share, "a", "mlp"}) > 1;
                               },
                               {{metric::share, "a", "mlp"}}};
  const auto r = judge(p, check, run);
  CHECK(r.verdict == verdict_kind::inconclusive);
  CHECK(r.reason.find("arm a has no region \"mlp\" at fwd 128x1024") != std::string::npos);
}

TEST_CASE("analysis 2: a cheating cell cannot decide, as a failed correctness check cannot") {
  raw_run run = make_run();
  const protocol p = make_protocol();
  const auto judge_v = [&](int analysis) {
    rng gen(bootstrap_seed(hash_a));
    return evaluate_prediction(p, p.predictions.at(0), slower("a", "b"), run, gen, analysis);
  };
  SUBCASE("work left pending after the window") {
    run.cells[3].off_window_ms = 0.5; // b at 256: median 1 ms; 0.5 > 0.05 and > 0.1
    const auto r = judge_v(2);
    CHECK(r.verdict == verdict_kind::inconclusive);
    CHECK(r.reason == "arm b left 0.5 ms of device work pending after a timed window at fwd "
                      "256x1024 (median 1 ms)");
    CHECK(ps(r) == std::vector<std::optional<double>>{1.0, 1.0}); // the draws are unchanged
    CHECK(judge_v(1).verdict == verdict_kind::confirmed);         // analysis 1: as before
    run.cells[3].off_window_ms = 0.09; // under 0.1 x the median: not off-window work
    CHECK(judge_v(2).verdict == verdict_kind::confirmed);
  }
  SUBCASE("a changed input") {
    run.cells[1].input_mutated = "x[0] changed";
    const auto r = judge_v(2);
    CHECK(r.verdict == verdict_kind::inconclusive);
    CHECK(r.reason == "arm b changed an input inside a timed call at fwd 128x1024");
    CHECK(judge_v(1).verdict == verdict_kind::confirmed);
  }
  SUBCASE("a reading beyond the physical margin over the ceiling") {
    // b (repeat 2) moves 2 x 1,057,792 bytes in 1 ms at 128 rows: 2.116 GB/s, 235.1% of a
    // 0.9 GB/s ceiling; 2 x 2,107,392 bytes at 256 rows: 468.3%. a (2 ms, repeat 1) reads
    // 58.8% and 117.1%.
    run.instrument.ceiling_gbps = 0.9;
    const auto r = judge_v(2);
    CHECK(r.verdict == verdict_kind::inconclusive);
    CHECK(r.reason == "arm b reads 235.1% of the measured copy ceiling at fwd 128x1024, beyond "
                      "the physical margin of 115%; arm a reads 117.1% of the measured copy "
                      "ceiling at fwd 256x1024, beyond the physical margin of 115%; arm b reads "
                      "468.3% of the measured copy ceiling at fwd 256x1024, beyond the physical "
                      "margin of 115%");
    CHECK(judge_v(1).verdict == verdict_kind::confirmed);
    // Analysis 3's margin is 150%: a's 117.1% is within it, b's 235.1% and 468.3% are not.
    const auto r3 = judge_v(3);
    CHECK(r3.verdict == verdict_kind::inconclusive);
    CHECK(r3.reason == "arm b reads 235.1% of the measured copy ceiling at fwd 128x1024, beyond "
                       "the physical margin of 150%; arm b reads 468.3% of the measured copy "
                       "ceiling at fwd 256x1024, beyond the physical margin of 150%");
    // b at 128 rows: 105.8%, above the ceiling, within the margin
    run.instrument.ceiling_gbps = 2.0;
    run.cells[2].samples_ms = {3.0, 3.1, 2.9, 3.0, 3.05}; // a at 256: 35.1%
    run.cells[3].samples_ms = {2.0, 2.1, 1.9, 2.0, 2.05}; // b at 256: 105.4%
    CHECK(judge_v(2).verdict == verdict_kind::confirmed);
  }
}
