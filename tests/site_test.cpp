// The site's step detection and its cache format (docs/site.md).
#include "site/history.hpp"
#include "site/steps.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace prereg::site;

namespace {

/// `n` values around `level` with a deterministic +-0.5% wiggle.
std::vector<double> flat(double level, int n, int phase = 0) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i)
    v.push_back(level * (1 + 0.005 * std::sin(1.7 * (i + phase))));
  return v;
}

std::vector<double> join(std::vector<double> a, const std::vector<double> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

} // namespace

TEST_CASE("steps: one level shift of 25% is found where it starts") {
  const auto v = join(flat(1.0, 12), flat(1.25, 10, 3));
  const auto steps = detect_steps(v);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].at == 12);
  CHECK(steps[0].ratio() == doctest::Approx(1.25).epsilon(0.01));
}

TEST_CASE("steps: noise alone, or a shift below the 5% minimum effect, is no step") {
  CHECK(detect_steps(flat(2.0, 40)).empty());
  CHECK(detect_steps(join(flat(1.0, 15), flat(1.03, 15, 5))).empty());
  // the same 3% shift counts with a smaller minimum effect
  CHECK(detect_steps(join(flat(1.0, 15), flat(1.03, 15, 5)), 0.01).size() == 1);
}

TEST_CASE("steps: two steps, up then down; a single outlier is not a step") {
  const auto v = join(join(flat(1.0, 10), flat(1.5, 10, 2)), flat(1.0, 10, 4));
  const auto steps = detect_steps(v);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].at == 10);
  CHECK(steps[1].at == 20);
  CHECK(steps[1].ratio() < 1);
  auto spike = flat(1.0, 30);
  spike[15] = 3.0;
  for (const step &s : detect_steps(spike))
    CHECK((s.at == 15 || s.at == 16)); // at most the spike itself, never a level change elsewhere
}

TEST_CASE("steps: fewer than 3 points or a non-positive value give none") {
  CHECK(detect_steps({1.0, 2.0}).empty());
  CHECK(detect_steps({1.0, 1.0, 0.0, 2.0, 2.0, 2.0}).empty());
  CHECK(detect_steps({1.0, 1.0, NAN, 2.0, 2.0, 2.0}).empty());
}

TEST_CASE("site cache: facts round-trip; another format is not read") {
  report_facts f;
  f.rel = "id/run";
  f.status = "audit failed";
  f.why = "statistics: differs";
  f.protocol_hash = "ab";
  f.run_id = "run";
  f.attempt = 3;
  f.verdicts = {{"P1", "confirmed"}};
  f.medians = {{"fused fwd 1x2", 0.5}};
  const auto back = facts_from_json(to_json(f));
  REQUIRE(back);
  CHECK(back->why == f.why);
  CHECK(back->attempt == 3);
  CHECK(back->verdicts == f.verdicts);
  CHECK(back->medians == f.medians);
  auto other = to_json(f);
  other["format"] = 99;
  CHECK_FALSE(facts_from_json(other));
}
