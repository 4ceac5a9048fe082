// The instrument's record (issue 35): the device's state per sample through NVML (a fake
// libnvidia-ml), the `throttled` defect, and the pre-registered stopping rule: parsed, hashed
// only when written, run on the fake device, replayed by the audit, and a report whose sample
// count the rule does not explain failing it.
#include "fake_device.hpp"

#include "analysis/cell_stats.hpp"
#include "audit/audit.hpp"
#include "base/fs.hpp"
#include "crypto/signed_json.hpp"
#include "device/nvml_state.hpp"
#include "model/report_model.hpp"
#include "report/report.hpp"
#include "report/report_text.hpp"
#include "spec/device_state.hpp"
#include "spec/stop_rule.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

using namespace prereg;
using namespace prereg::testing;
namespace fs = std::filesystem;

namespace {

/// test_protocol_yaml as prereg: 2 with `measurement` replaced by `with`.
std::string v2_protocol(const std::string &measurement) {
  std::string y = test_protocol_yaml;
  y.replace(y.find("prereg: 1"), 9, "prereg: 2");
  y.replace(y.find("shapes:"), 7, "axes:");
  const auto at = y.find("measurement:");
  const auto end = y.find("analysis:");
  y.replace(at, end - at, "measurement:\n" + measurement);
  return y;
}

const std::string stop_measurement =
    "  stop: {rel_ci: 0.01, min: 10, max: 60, max_seconds: 30}\n  warmup: 2\n";

std::string refusal(const std::string &yaml) {
  try {
    (void)parse_protocol(yaml, "p.yaml");
  } catch (const error &e) {
    return e.what();
  }
  return "(accepted)";
}

/// Writes `report` and a fresh envelope signed by `key`, and its pages.
void resign(const fs::path &dir, const json &report, const signing_key &key) {
  const std::string bytes = canonical_json(report);
  write_file_atomic(dir / "report.json", bytes);
  write_file_atomic(dir / "report.dsse.json", make_envelope(bytes, key));
  const report_document doc = report_from_json(report, "report.json");
  write_file_atomic(dir / "report.md", render_markdown(doc));
  write_file_atomic(dir / "report.html", render_html(doc));
}

bool check_passed(const audit_result &r, const std::string &name, std::string *detail = nullptr) {
  for (const auto &c : r.checks)
    if (c.name == name) {
      if (detail != nullptr)
        *detail = c.detail;
      return c.passed;
    }
  return false;
}

/// Plants: `unfused` alternates 1x / 3x (its median's interval never narrows: it runs to max),
/// `fused` is steady (it stops for precision); the state reader says the SM clock fell and
/// the power cap held at samples 3 and 7 of fused at 128 rows.
fake_plants stop_plants() {
  fake_plants p;
  p.samples = [](const cell_key &k, std::int64_t n) {
    return k.arm == "unfused" ? unstable_samples(0.2, n) : steady_samples(0.1, n);
  };
  p.states = [](const cell_key &k, std::size_t i) {
    device_state_sample s;
    const bool capped = k.arm == "fused" && k.rows == 128 && (i == 3 || i == 7);
    s.sm_mhz = capped ? 1410 : 1980;
    s.mem_mhz = 3201;
    s.power_w = capped ? 700 : 450.5;
    s.temp_c = 55;
    s.reasons = capped ? 0x4 : 0x0;
    return s;
  };
  return p;
}

} // namespace

TEST_CASE("the NVML state reader reads a fake libnvidia-ml") {
  std::string why;
  const auto r = nvml_state_reader::open("0000:00:00.0", 0, why, PREREG_FAKE_NVML);
  REQUIRE_MESSAGE(r != nullptr, why);
  CHECK(r->describe().find("NVML 999.1.2-fake") == 0);
  const device_state_sample a = r->read(), b = r->read(), c = r->read();
  CHECK(a.sm_mhz == 1980);
  CHECK(b.sm_mhz == 1979);
  CHECK(a.mem_mhz == 2619);
  CHECK(a.power_w == doctest::Approx(400.5));
  CHECK(c.temp_c == 62);
  CHECK(a.reasons == std::optional<std::uint64_t>(0x1));
  CHECK(c.reasons == std::optional<std::uint64_t>(0x5));
  CHECK((*a.reasons & throttle_reason_mask) == 0); // idle is no throttling
  CHECK(throttle_reason_names(*c.reasons) == "sw-power-cap");
  CHECK(throttle_reason_names(0x4 | 0x40) == "sw-power-cap+hw-thermal");

  SUBCASE("a library that is not there, a device NVML does not have") {
    std::string not_there;
    CHECK(nvml_state_reader::open("", 0, not_there, "/nonexistent/libnvidia-ml.so.1") == nullptr);
    CHECK(not_there.find("not loadable") != std::string::npos);
    std::string no_device;
    CHECK(nvml_state_reader::open("", 3, no_device, PREREG_FAKE_NVML) == nullptr);
    CHECK(no_device.find("did not find the device") != std::string::npos);
  }
}

TEST_CASE("states and stop records: one JSON form, read strictly") {
  std::vector<device_state_sample> s(2);
  s[0].sm_mhz = 1980;
  s[0].reasons = 4;
  json j = states_json(s);
  CHECK(j.at("sm_mhz") == json::array({1980.0, nullptr}));
  std::vector<device_state_sample> back;
  CHECK(read_states_json(j, 2, back).empty());
  CHECK(back == s);
  CHECK(read_states_json(j, 3, back) == "sm_mhz has 2 values for 3 samples");
  j["reasons"][1] = -1;
  CHECK(read_states_json(j, 2, back) == "reasons[1] is not a non-negative integer or null");
  stop_record r{"precision", 0.004, 0.99, 1.01, 0.25};
  stop_record r2;
  CHECK(read_stop_json(stop_json(r), r2).empty());
  CHECK(r2.reason == "precision");
  CHECK(r2.ci_hi_ms == 1.01);
  json bad = stop_json(r);
  bad["reason"] = "bored";
  CHECK(read_stop_json(bad, r2).find("not precision, max, max_seconds or error") !=
        std::string::npos);
}

TEST_CASE("measurement.stop: prereg: 2 only, instead of repetitions; absent, no hash moves") {
  const protocol p = parse_protocol(v2_protocol(stop_measurement), "p.yaml");
  REQUIRE(p.measurement.stop);
  CHECK(p.measurement.stop->rel_ci == 0.01);
  CHECK(p.measurement.stop->min == 10);
  CHECK(p.measurement.repetitions == 60); // stop.max: budgets and limits see the most
  const json body = to_json(p);
  CHECK_FALSE(body.at("measurement").contains("repetitions"));
  CHECK(body.at("measurement").at("stop") ==
        json{{"rel_ci", 0.01}, {"min", 10}, {"max", 60}, {"max_seconds", 30.0}});
  const protocol fixed = parse_protocol(v2_protocol("  repetitions: 20\n  warmup: 2\n"), "p.yaml");
  CHECK_FALSE(to_json(fixed).at("measurement").contains("stop"));
  // The normalised protocol round-trips (the audit re-reads the body).
  CHECK(protocol_from_json(body, "body").measurement.stop == p.measurement.stop);

  CHECK(refusal(test_protocol_yaml + std::string()).find("(accepted)") == 0);
  std::string v1 = test_protocol_yaml;
  v1.replace(v1.find("  repetitions: 20"), 17,
             "  stop: {rel_ci: 0.01, min: 10, max: 60, "
             "max_seconds: 30}");
  CHECK(refusal(v1).find("measurement.stop needs prereg: 2") != std::string::npos);
  CHECK(refusal(v2_protocol("  repetitions: 20\n" + stop_measurement)).find("exclude each other") !=
        std::string::npos);
  CHECK(refusal(v2_protocol("  stop: {rel_ci: 0.01, min: 50, max: 20, max_seconds: 30}\n"))
            .find("is below measurement.stop.min") != std::string::npos);
  CHECK(refusal(v2_protocol("  stop: {rel_ci: 0, min: 10, max: 20, max_seconds: 30}\n"))
            .find("rel_ci must be above 0") != std::string::npos);
  CHECK(refusal(v2_protocol("  stop: {rel_ci: 0.01, min: 10, max: 20}\n")).find("max_seconds") !=
        std::string::npos);
}

TEST_CASE("the stopping rule's check is seeded and its replay finds a count it does not explain") {
  const stop_spec rule{0.01, 10, 60, 30};
  const cell_key k{"fused", pass_kind::fwd, 64, 256, {}};
  const std::uint64_t seed = stop_seed(seed_from_hash("ab12"), k);
  CHECK(seed !=
        stop_seed(seed_from_hash("ab12"), cell_key{"unfused", pass_kind::fwd, 64, 256, {}}));
  const auto steady = steady_samples(0.1, 60);
  const auto first = stop_check(std::span(steady).first(10), 0.95, seed);
  const auto again = stop_check(std::span(steady).first(10), 0.95, seed);
  CHECK(first.lo_ms == again.lo_ms);
  CHECK(first.hi_ms == again.hi_ms);
  CHECK(first.lo_ms <= first.median_ms);
  CHECK(first.hi_ms >= first.median_ms);
  REQUIRE(precise_enough(rule, first, 10));
  // The counted medians are the definition's: each resample's ranks sorted, its R-7 median.
  for (const std::size_t n : {std::size_t{7}, std::size_t{10}}) {
    const auto noisy = unstable_samples(0.2, 12);
    std::vector<double> x(noisy.begin(), noisy.begin() + static_cast<std::ptrdiff_t>(n));
    x[3] = 0.7; // not only two values
    std::vector<double> sorted = x;
    std::sort(sorted.begin(), sorted.end());
    rng draw(seed ^ (static_cast<std::uint64_t>(n) * 0x9e3779b97f4a7c15ULL));
    std::vector<double> medians;
    for (std::int64_t b = 0; b < stop_resamples; ++b) {
      std::vector<double> one;
      for (std::size_t j = 0; j < n; ++j)
        one.push_back(sorted[draw.below(n)]);
      medians.push_back(median(one));
    }
    std::sort(medians.begin(), medians.end());
    const auto fast = stop_check(x, 0.9, seed);
    CHECK(fast.lo_ms == quantile_sorted(medians, 0.05));
    CHECK(fast.hi_ms == quantile_sorted(medians, 0.95));
    CHECK(fast.median_ms == median(x));
  }
  const stop_record ok{"precision", first.rel_ci, first.lo_ms, first.hi_ms, 0.1};
  CHECK(stop_replay_problem(rule, 0.95, seed, std::span(steady).first(10), ok, false).empty());
  // Twelve samples when the rule was met at ten: the count is not the rule's.
  const auto late = stop_check(std::span(steady).first(12), 0.95, seed);
  const stop_record more{"precision", late.rel_ci, late.lo_ms, late.hi_ms, 0.1};
  CHECK(stop_replay_problem(rule, 0.95, seed, std::span(steady).first(12), more, false) ==
        "has 12 samples, but the rule was met after 10");
  // A noisy cell that stopped "at max" short of max; and one that claims precision it lacks.
  const auto noisy = unstable_samples(0.2, 60);
  const auto at40 = stop_check(std::span(noisy).first(40), 0.95, seed);
  CHECK_FALSE(precise_enough(rule, at40, 40));
  CHECK(stop_replay_problem(rule, 0.95, seed, std::span(noisy).first(40),
                            {"max", at40.rel_ci, at40.lo_ms, at40.hi_ms, 1},
                            false) == "stopped at max with 40 samples, not stop.max 60");
  CHECK(stop_replay_problem(rule, 0.95, seed, std::span(noisy).first(40),
                            {"precision", at40.rel_ci, at40.lo_ms, at40.hi_ms, 1}, false)
            .find("above rel_ci 0.01") != std::string::npos);
  CHECK(stop_replay_problem(rule, 0.95, seed, std::span(noisy).first(40),
                            {"max_seconds", at40.rel_ci, at40.lo_ms, at40.hi_ms, 31}, false)
            .empty());
  CHECK(stop_replay_problem(rule, 0.95, seed, std::span(noisy).first(40),
                            {"max_seconds", at40.rel_ci, at40.lo_ms, at40.hi_ms, 3}, false)
            .find("below 30") != std::string::npos);
  CHECK(stop_replay_problem(rule, 0.95, seed, std::span(noisy).first(5),
                            {"error", NAN, NAN, NAN, 0}, true)
            .empty());
}

TEST_CASE("a run with a stopping rule and a state reader: schema 7, throttled, audited") {
  temp_lab lab;
  lab.freeze(v2_protocol(stop_measurement));
  run_options o = lab.options(stop_plants());
  use_fake(o, stop_plants(), 60); // the planted series are stop.max long
  const fs::path dir = run_protocol(o);
  json report = read_report(dir);
  CHECK(report.at("schema_version") == report_schema_version_state);
  CHECK(report.at("environment").at("device_state") == "fake NVML");
  CHECK(report.at("environment").at("device_state_read_ms").is_number());
  for (const auto &c : report.at("cells")) {
    const std::size_t n = c.at("samples_ms").size();
    CHECK(c.at("states").at("sm_mhz").size() == n);
    if (c.at("arm") == "unfused") {
      CHECK(c.at("stop").at("reason") == "max");
      CHECK(n == 60);
    } else {
      CHECK(c.at("stop").at("reason") == "precision");
      CHECK(n >= 10);
      CHECK(n < 60);
      CHECK(c.at("stop").at("rel_ci").get<double>() <= 0.01);
    }
  }
  json throttled;
  for (const auto &d : report.at("defects"))
    if (d.at("code") == "throttled")
      throttled.push_back(d);
  REQUIRE(throttled.size() == 1);
  // tests/e2e/schemas.sh validates this report against docs/schema/report.schema.json.
  if (const char *samples = std::getenv("PREREG_SCHEMA_SAMPLES"))
    write_file_atomic(fs::path(samples) / "state_stop_throttled.json", canonical_json(report));
  CHECK(throttled[0].at("cell").at("rows") == 128);
  CHECK(throttled[0].at("evidence").at("samples") == json::array({3, 7}));
  CHECK(throttled[0].at("evidence").at("reasons") == "sw-power-cap");
  const std::string md = read_file(dir / "report.md");
  CHECK(md.find("## Device state and stopping") != std::string::npos);
  CHECK(md.find("2 of ") != std::string::npos); // the throttled samples of a cell
  CHECK(read_file(dir / "report.html").find("<svg class=\"strip\"") != std::string::npos);
  const audit_result clean = audit_report(dir, lab.st(), std::vector<public_key>{});
  std::string detail;
  CHECK(check_passed(clean, "statistics", &detail));
  CHECK(detail.find("the stopping rule") != std::string::npos);
  CHECK(clean.passed());

  const signing_key key = lab.key();
  SUBCASE("the throttle record removed from one sample: the defect no longer recomputes") {
    for (auto &c : report.at("cells"))
      if (c.at("arm") == "fused" && c.at("rows") == 128)
        c["states"]["reasons"][3] = 0;
    resign(dir, report, key);
    CHECK_FALSE(check_passed(audit_report(dir, lab.st(), std::vector<public_key>{}), "defects"));
  }
  SUBCASE("a consistent forger cuts a cell's samples short: the rule does not explain it") {
    const protocol proto = protocol_from_json(report.at("protocol").at("body"), "body");
    report_document doc = report_from_json(report, "report.json");
    raw_run raw = report_to_raw(doc);
    for (std::size_t i = 0; i < raw.cells.size(); ++i) {
      cell_record &c = raw.cells[i];
      if (c.key.arm != "unfused" || c.key.rows != 64)
        continue;
      c.samples_ms.resize(40); // "max" kept, the statistics recomputed as the forger would
      c.states.resize(40);
      const auto st = compute_cell_statistics(c, proto, raw.instrument, raw.correctness);
      doc.cells[i] = to_report_cell(c, st, doc.schema_version);
    }
    resign(dir, to_json(doc), key);
    const audit_result r = audit_report(dir, lab.st(), std::vector<public_key>{});
    CHECK_FALSE(check_passed(r, "statistics", &detail));
    CHECK(detail.find("the stopping rule does not explain the sample counts: unfused fwd "
                      "64x256 stopped at max with 40 samples, not stop.max 60") !=
          std::string::npos);
  }
}
