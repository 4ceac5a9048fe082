// Tests of the cell-by-cell comparison of two reports (ratio of medians, bootstrap interval).
#include "analysis/compare.hpp"

#include "base/stats.hpp"
#include "model/report_model.hpp"
#include "prereg/error.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using prereg::json;

namespace {

const std::string hash_a = "3f1c9a2b7d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd";
const std::string hash_b = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807f6e5d4c3b2a1908f7e6d5c4b";

// Thirty samples around `base` ms with a spread of about 3%, in a fixed irregular order.
json samples(double base, double scale = 1.0) {
  json s = json::array();
  for (int i = 0; i < 30; ++i)
    s.push_back(base * (1.0 + 0.003 * ((i * 7) % 11)) * scale);
  return s;
}

/// A cells[] entry holding only what the comparison reads (its statistics are null).
json cell(const std::string &arm, const std::string &pass, std::int64_t rows, json samples_ms) {
  prereg::report_cell c;
  c.key = {arm, pass == "fwd" ? prereg::pass_kind::fwd : prereg::pass_kind::fwd_bwd, rows, 1024};
  c.samples_ms = samples_ms.get<std::vector<double>>();
  c.n = c.samples_ms.size();
  return prereg::to_json(c);
}

/// A complete version-1 report (the sample of tests/data/reports) with these cells.
json report(const std::string &hash, const std::string &run_id, double scale) {
  std::ifstream in(std::filesystem::path(PREREG_TEST_DATA) / "reports" / "cpu_rmsnorm.json");
  std::stringstream text;
  text << in.rdbuf();
  json r = json::parse(text.str());
  r["protocol"]["hash"] = hash;
  r["protocol"]["body"]["id"] = "ln_batch1";
  r["protocol"]["body"]["analysis"]["confidence"] = 0.95;
  r["protocol"]["body"]["analysis"]["bootstrap_resamples"] = 2000;
  r["run"]["run_id"] = run_id;
  json cells = json::array();
  for (const char *arm : {"unfused", "fused"})
    for (const std::int64_t rows : {128, 4096})
      cells.push_back(
          cell(arm, "fwd", rows, samples(0.004 * static_cast<double>(rows) / 128.0, scale)));
  r["cells"] = cells;
  return r;
}

const json *find(const json &cmp, const std::string &arm, std::int64_t rows) {
  for (const json &c : cmp["cells"])
    if (c["arm"] == arm && c["rows"] == rows)
      return &c;
  return nullptr;
}

} // namespace

TEST_CASE("B twice as slow as A: ratio 2, interval excluding 1, marked slower") {
  const json a = report(hash_a, "run-a", 1.0);
  const json b = report(hash_a, "run-b", 2.0);
  const json cmp = prereg::compare_reports(a, b);
  REQUIRE(cmp["cells"].size() == 4);
  for (const json &c : cmp["cells"]) {
    CAPTURE(c.dump());
    CHECK(c["ratio"].get<double>() == doctest::Approx(2.0).epsilon(1e-12));
    CHECK(c["ci_lo"].get<double>() > 1.8);
    CHECK(c["ci_lo"].get<double>() <= c["ratio"].get<double>());
    CHECK(c["ci_hi"].get<double>() >= c["ratio"].get<double>());
    CHECK(c["ci_hi"].get<double>() < 2.25);
    CHECK(c["mark"] == "slower");
    CHECK(c["n_a"] == 30);
    CHECK(c["n_b"] == 30);
  }
  CHECK(cmp["summary"]["slower"] == 4);
  CHECK(cmp["summary"]["geomean_ratio"].get<double>() == doctest::Approx(2.0));
  CHECK(cmp["confidence"] == 0.95);
  CHECK(cmp["bootstrap_resamples"] == 2000);
  CHECK(cmp["a"]["run_id"] == "run-a");
  CHECK(cmp["b"]["run_id"] == "run-b");

  SUBCASE("the other way round it is faster") {
    const json back = prereg::compare_reports(b, a);
    for (const json &c : back["cells"]) {
      CHECK(c["ratio"].get<double>() == doctest::Approx(0.5));
      CHECK(c["ci_hi"].get<double>() < 1.0);
      CHECK(c["mark"] == "faster");
    }
  }
  SUBCASE("deterministic") { CHECK(prereg::compare_reports(a, b) == cmp); }
  SUBCASE("text table") {
    const std::string text = prereg::render_comparison(cmp);
    CAPTURE(text);
    CHECK(text.find("A = run run-a (protocol ln_batch1 3f1c9a2b7d4e)") == 0);
    CHECK(text.find("95% percentile-bootstrap interval from 2000 resamples") != std::string::npos);
    CHECK(text.find("\ncell                   median A  median B  ratio  [lo, hi]        mark\n") !=
          std::string::npos);
    CHECK(text.find("\nunfused fwd 4096x1024    130 µs    260 µs  2.000  [") != std::string::npos);
    CHECK(text.find("fused fwd 4096x1024") != std::string::npos);
    CHECK(text.find("  2.000  [") != std::string::npos);
    CHECK(text.find("0 faster, 4 slower, 0 same; geometric mean ratio 2.000") != std::string::npos);
  }
}

TEST_CASE("identical reports: ratio 1, interval containing 1, marked same") {
  const json a = report(hash_a, "run-a", 1.0);
  const json cmp = prereg::compare_reports(a, a);
  for (const json &c : cmp["cells"]) {
    CHECK(c["ratio"].get<double>() == 1.0);
    CHECK(c["ci_lo"].get<double>() <= 1.0);
    CHECK(c["ci_hi"].get<double>() >= 1.0);
    CHECK(c["ci_lo"].get<double>() > 0.9);
    CHECK(c["mark"] == "same");
  }
  CHECK(cmp["summary"]["same"] == 4);
}

TEST_CASE("medians agree with prereg::median (R-7) for odd and even sample counts") {
  for (const std::size_t n : {1u, 2u, 5u, 6u, 31u, 60u}) {
    std::vector<double> xs;
    for (std::size_t i = 0; i < n; ++i)
      xs.push_back(1.0 + 0.001 * static_cast<double>((i * 37) % 17));
    json a = report(hash_a, "a", 1.0);
    a["cells"] = json::array({cell("x", "fwd", 1, xs)});
    const json c = prereg::compare_reports(a, a)["cells"][0];
    CAPTURE(n);
    CHECK(c["median_a_ms"].get<double>() == prereg::median(xs));
  }
}

TEST_CASE("one-sample cells give an exact interval") {
  json a = report(hash_a, "a", 1.0);
  json b = report(hash_b, "b", 1.0);
  a["cells"] = json::array({cell("x", "fwd", 1, {1.0})});
  b["cells"] = json::array({cell("x", "fwd", 1, {3.0})});
  const json c = prereg::compare_reports(a, b)["cells"][0];
  CHECK(c["ratio"] == 3.0);
  CHECK(c["ci_lo"] == 3.0);
  CHECK(c["ci_hi"] == 3.0);
  CHECK(c["mark"] == "slower");
}

TEST_CASE("reports of two protocols: shared cells only, the rest listed") {
  json a = report(hash_a, "a", 1.0);
  json b = report(hash_b, "b", 1.0);
  b["cells"].erase(0); // unfused fwd 128: only in A
  b["cells"].push_back(cell("fused_graph", "fwd", 128, samples(0.003))); // only in B
  b["cells"].push_back(cell("fused", "fwd+bwd", 128, json::array()));
  a["cells"].push_back(cell("fused", "fwd+bwd", 128, samples(0.008)));
  const json cmp = prereg::compare_reports(a, b);
  CHECK(cmp["cells"].size() == 4);
  CHECK(cmp["only_in_a"] ==
        json::array({{{"arm", "unfused"}, {"pass", "fwd"}, {"rows", 128}, {"cols", 1024}}}));
  REQUIRE(cmp["only_in_b"].size() == 1);
  CHECK(cmp["only_in_b"][0]["arm"] == "fused_graph");
  const json *empty = nullptr;
  for (const json &c : cmp["cells"])
    if (c["pass"] == "fwd+bwd")
      empty = &c;
  REQUIRE(empty != nullptr);
  CHECK((*empty)["mark"] == "no-samples");
  CHECK((*empty)["ratio"].is_null());
  CHECK((*empty)["median_b_ms"].is_null());
  CHECK((*empty)["median_a_ms"].get<double>() > 0.0);
  CHECK(find(cmp, "unfused", 4096) != nullptr);
  const std::string text = prereg::render_comparison(cmp);
  CHECK(text.find("only in A (1): unfused fwd 128x1024") != std::string::npos);
  CHECK(text.find("only in B (1): fused_graph fwd 128x1024") != std::string::npos);
  CHECK(text.find("fused fwd+bwd 128x1024") != std::string::npos);
  CHECK(text.find("no-samples") != std::string::npos);
}

TEST_CASE("the seed depends on both hashes, their order and the cell") {
  const auto s = prereg::compare_cell_seed(hash_a, hash_b, "fused|fwd|128x1024");
  CHECK(s == prereg::compare_cell_seed(hash_a, hash_b, "fused|fwd|128x1024"));
  CHECK(s != prereg::compare_cell_seed(hash_b, hash_a, "fused|fwd|128x1024"));
  CHECK(s != prereg::compare_cell_seed(hash_a, hash_b, "fused|fwd|256x1024"));
  CHECK(prereg::compare_cell_seed(hash_a, hash_a, "x") !=
        prereg::compare_cell_seed(hash_b, hash_b, "x"));
}

TEST_CASE("malformed reports are invalid input naming the report") {
  const json a = report(hash_a, "a", 1.0);
  const auto fails_with = [](const json &x, const json &y, const std::string &message) {
    try {
      (void)prereg::compare_reports(x, y);
      FAIL("expected an error");
    } catch (const prereg::error &e) {
      CHECK(e.code() == prereg::exit_code::invalid);
      CHECK(std::string(e.what()) == message);
    }
  };
  json no_conf = a;
  no_conf["protocol"]["body"]["analysis"].erase("confidence");
  fails_with(no_conf, a, "report A has no protocol.body.analysis.confidence");
  json bad_conf = a;
  bad_conf["protocol"]["body"]["analysis"]["confidence"] = 1.0;
  fails_with(bad_conf, a, "report A: protocol.body.analysis.confidence is not in (0, 1)");
  json bad_sample = a;
  bad_sample["cells"][2]["samples_ms"][3] = "fast";
  fails_with(a, bad_sample, "report B: cells[2].samples_ms[3] is not a number");
  json no_cells = a;
  no_cells.erase("cells");
  fails_with(a, no_cells, "report B: cells is missing");
  json dup = a;
  dup["cells"].push_back(a["cells"][0]);
  fails_with(dup, a, "report A: cells[4] repeats cell unfused|fwd|128x1024");
  fails_with(json::array(), a, "report A: report is not an object");
}

TEST_CASE("--min-effect: a difference below it is 'same' even when its interval excludes 1") {
  const json a = report(hash_a, "run-a", 1.0);
  const json b = report(hash_a, "run-b", 1.03); // 3% slower, with tight within-run noise
  const json by_default = prereg::compare_reports(a, b);
  CHECK(by_default["min_effect"] == doctest::Approx(0.05));
  for (const json &c : by_default["cells"]) {
    CHECK(c["ci_lo"].get<double>() > 1.0); // the interval alone would say slower
    CHECK(c["mark"] == "same");
  }
  CHECK(by_default["summary"]["same"] == 4);
  const json strict = prereg::compare_reports(a, b, 0.0);
  for (const json &c : strict["cells"])
    CHECK(c["mark"] == "slower");
  CHECK(prereg::compare_reports(a, report(hash_a, "run-c", 1.08))["summary"]["slower"] == 4);
  const std::string text = prereg::render_comparison(by_default);
  CHECK(text.find("within 5% of 1 (--min-effect)") != std::string::npos);
  CHECK(text.find("one run a side: the interval covers the noise within each run, not the "
                  "variation from run to run") != std::string::npos);
  CHECK_THROWS_AS(prereg::compare_reports(a, b, 1.5), prereg::error);
}

TEST_CASE("several runs a side: the bootstrap resamples runs, so run-to-run variation counts") {
  using prereg::report_document;
  const auto doc = [](const std::string &run, double scale) {
    return prereg::report_from_json(report(hash_a, run, scale), "report.json");
  };
  // Runs of identical code whose level moves 12% from run to run.
  const std::vector<report_document> as{doc("a1", 1.0), doc("a2", 1.12)};
  const std::vector<report_document> bs{doc("b1", 1.12), doc("b2", 1.0)};
  // One run a side picks out two levels 12% apart and calls it slower.
  const json one = prereg::compare_reports(as[0], bs[0]);
  CHECK(one["summary"]["slower"] == 4);
  const json many = prereg::compare_reports(as, bs);
  CHECK(many["runs_a"] == 2);
  CHECK(many["runs_b"] == 2);
  CHECK(many["a"]["run_ids"] == json::array({"a1", "a2"}));
  CHECK(std::string(many["method"]).find("resampling runs, then samples") != std::string::npos);
  for (const json &c : many["cells"]) {
    CAPTURE(c.dump());
    CHECK(c["n_a"] == 60);
    CHECK(c["ci_lo"].get<double>() < 1.0);
    CHECK(c["ci_hi"].get<double>() > 1.0);
    CHECK(c["mark"] == "same");
  }
  CHECK(prereg::compare_reports(as, bs) == many); // deterministic
  // A real 2x slowdown still shows through run-level resampling.
  const std::vector<report_document> slow{doc("s1", 2.0), doc("s2", 2.2)};
  CHECK(prereg::compare_reports(as, slow)["summary"]["slower"] == 4);
}

TEST_CASE("two revisions: an arm whose code differs is named, with both hashes") {
  const json a = report(hash_a, "run-a", 1.0);
  json b = report(hash_b, "run-b", 1.0);
  CHECK(prereg::compare_reports(a, b)["code_changed"].empty()); // same code in both
  CHECK(prereg::render_comparison(prereg::compare_reports(a, b)).find("code differs") ==
        std::string::npos);
  const std::string new_hash(64, 'c');
  b["protocol"]["freeze"]["kernels"]["vector"]["source_sha256"] = new_hash;
  b["protocol"]["freeze"]["kernels"]["scalar"] = {
      {"python", "scalar.py"}, {"entry", "rms"}, {"file", "scalar.py"}, {"sha256", new_hash}};
  const json cmp = prereg::compare_reports(a, b);
  REQUIRE(cmp["code_changed"].size() == 2);
  CHECK(cmp["code_changed"][0]["arm"] == "scalar");
  CHECK(cmp["code_changed"][0]["a"]["code"] == "kernel rmsnorm.scalar");
  CHECK(cmp["code_changed"][0]["b"]["code"] == "python scalar.py:rms");
  CHECK(cmp["code_changed"][1]["arm"] == "vector");
  CHECK(cmp["code_changed"][1]["b"]["sha256"] == new_hash);
  const std::string text = prereg::render_comparison(cmp);
  CHECK(text.find("arm vector's code differs: A runs ca36e34d0a6f (kernel rmsnorm.vector), B runs "
                  "cccccccccccc (kernel rmsnorm.vector); its ratios compare two versions of its "
                  "code\n") != std::string::npos);
  CHECK(text.find("arm scalar's code differs: A runs bbafb6bf33a9 (kernel rmsnorm.scalar), B runs "
                  "cccccccccccc (python scalar.py:rms)") != std::string::npos);
}
