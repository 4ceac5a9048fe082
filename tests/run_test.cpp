// The run engine end to end on the fake backend: report folder, ledger, refusals, planted
// defects with their exact codes, and deviations.
#include "fake_device.hpp"

#include "prereg/crypto.hpp"
#include "prereg/fs.hpp"
#include "prereg/ledger.hpp"
#include "prereg/report.hpp"
#include "prereg/run.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <regex>

using namespace prereg;
using namespace prereg::testing;
namespace fs = std::filesystem;

namespace {

/// The ledger entries of one event, in order.
std::vector<json> events(const temp_lab &lab, const std::string &event) {
  std::vector<json> out;
  for (const auto &e : lab.st().get_ledger().entries())
    if (e.value("event", "") == event)
      out.push_back(e);
  return out;
}

/// Every defect of the report with this code.
std::vector<json> defects_with(const json &report, const std::string &code) {
  std::vector<json> out;
  for (const auto &d : report.at("defects"))
    if (d.at("code") == code)
      out.push_back(d);
  return out;
}

json cell(const std::string &arm, std::int64_t rows) {
  return {{"arm", arm}, {"pass", "fwd"}, {"rows", rows}, {"cols", 256}};
}

const json &prediction(const json &report, const std::string &id) {
  for (const auto &p : report.at("predictions"))
    if (p.at("id") == id)
      return p;
  FAIL("no prediction " << id);
  throw std::logic_error("unreachable");
}

const json &cell_entry(const json &report, const std::string &arm, std::int64_t rows) {
  for (const auto &c : report.at("cells"))
    if (c.at("arm") == arm && c.at("rows") == rows)
      return c;
  FAIL("no cell " << arm << " " << rows);
  throw std::logic_error("unreachable");
}

bool has_flag(const json &c, const std::string &flag) {
  const auto &f = c.at("flags");
  return std::find(f.begin(), f.end(), json(flag)) != f.end();
}

/// True if nothing but possibly an empty protocol folder exists under the reports folder.
bool no_report_written(const temp_lab &lab) {
  if (!fs::exists(lab.out_dir))
    return true;
  for (const auto &e : fs::recursive_directory_iterator(lab.out_dir))
    if (!e.is_directory())
      return false;
  return true;
}

} // namespace

TEST_CASE("run writes a complete, canonical, signed report folder and ledger entries") {
  temp_lab lab;
  lab.freeze();
  const fs::path dir = lab.run();

  REQUIRE(fs::is_directory(dir));
  CHECK(dir.parent_path() == lab.out_dir / "fake_ln");
  CHECK(std::regex_match(dir.filename().string(),
                         std::regex("[0-9]{8}T[0-9]{6}Z-" + lab.hash.substr(0, 12) + "-[0-9a-f]{6}")));
  std::vector<std::string> files;
  for (const auto &e : fs::directory_iterator(dir))
    files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK(files ==
        std::vector<std::string>{"report.dsse.json", "report.html", "report.json", "report.md"});
  // no partial folder left beside it
  for (const auto &e : fs::directory_iterator(dir.parent_path()))
    CHECK(e.path().filename().string().find(".partial") == std::string::npos);

  const std::string bytes = read_file(dir / "report.json");
  const json report = parse_json_strict(bytes, "report.json");
  CHECK(canonical_json(report) == bytes);

  const json env = parse_json_strict(read_file(dir / "report.dsse.json"), "report.dsse.json");
  CHECK(env.at("payloadType") == "application/vnd.prereg.report+json");
  CHECK(base64_decode(env.at("payload").get<std::string>()) == bytes);
  REQUIRE(env.at("signatures").size() == 1);
  const signing_key key = lab.key();
  CHECK(env.at("signatures")[0].at("keyid") == key.fingerprint());
  CHECK(key.public_part().verify(
      dsse_pae(dsse_payload_type, bytes),
      base64_decode(env.at("signatures")[0].at("sig").get<std::string>())));

  SUBCASE("every contract field is there") {
    CHECK(report.at("schema_version") == report_schema_version);
    for (const char *k : {"version", "git_commit", "build_flags"})
      CHECK(report.at("tool").contains(k));
    CHECK(report.at("protocol").at("hash") == lab.hash);
    CHECK(sha256_hex(canonical_json(report.at("protocol").at("body"))) == lab.hash);
    CHECK(canonical_json(report.at("protocol").at("freeze")) ==
          read_file(lab.st().protocol_dir(lab.hash) / "freeze.json"));
    CHECK(report.at("environment").at("device_name") == "Fake Device 1");
    for (const char *k :
         {"ceiling_gbps", "launch_floor_ms", "timer_resolution_ms", "flush_bytes", "flush_method"})
      CHECK(report.at("instrument").contains(k));
    CHECK(report.at("instrument").at("flush_method") == "read-sweep");
    REQUIRE(report.at("cells").size() == 4);
    for (const auto &c : report.at("cells")) {
      for (const char *k :
           {"arm", "pass", "rows", "cols", "samples_ms", "median_ms", "q1_ms", "q3_ms", "iqr_ms",
            "mean_ms", "peak_bytes", "gbps", "pct_ceiling", "bound", "flags"})
        CHECK_MESSAGE(c.contains(k), k);
      CHECK(c.at("samples_ms").size() == 20);
      CHECK(c.at("flags").empty());
    }
    CHECK(report.at("correctness").size() == 4);
    for (const auto &c : report.at("correctness")) {
      CHECK(c.at("passed") == true);
      CHECK(c.contains("max_abs_error"));
      CHECK(c.contains("max_rel_error"));
    }
    REQUIRE(report.at("predictions").size() == 2);
    for (const auto &p : report.at("predictions")) {
      for (const char *k : {"id", "claim", "expect", "verdict", "cells", "reason"})
        CHECK(p.contains(k));
      CHECK(p.at("verdict") == "confirmed");
    }
    CHECK(prediction(report, "P1").at("cells").size() == 1);
    CHECK(prediction(report, "P1").at("cells")[0].at("p") == 1);
    CHECK(report.at("defects") == json::array());
    CHECK(report.at("deviations") == json::array());
    CHECK(report.at("attempt") == 1);
  }

  SUBCASE("the ledger holds the run's start and completion") {
    const auto starts = events(lab, ledger_event::run_start);
    const auto completes = events(lab, ledger_event::run_complete);
    REQUIRE(starts.size() == 1);
    REQUIRE(completes.size() == 1);
    const std::string run_id = dir.filename().string();
    CHECK(starts[0].at("run_id") == run_id);
    CHECK(starts[0].at("attempt") == 1);
    CHECK(starts[0].at("protocol_hash") == lab.hash);
    CHECK(starts[0].at("device_name") == "Fake Device 1");
    CHECK(starts[0].at("started_at") == report.at("run").at("started_at"));
    CHECK(completes[0].at("run_id") == run_id);
    CHECK(completes[0].at("report_sha256") == sha256_hex(bytes));
    CHECK(events(lab, ledger_event::run_aborted).empty());
    CHECK(lab.st().get_ledger().verify(
              [&](const std::string &fp) { return lab.st().find_key(fp); }) == 3);
  }

  SUBCASE("a second run is attempt 2 in its own folder") {
    const fs::path second = lab.run();
    CHECK(second != dir);
    CHECK(read_report(second).at("attempt") == 2);
    CHECK(read_report(dir).at("attempt") == 1);
    CHECK(events(lab, ledger_event::run_start).back().at("attempt") == 2);
  }

  SUBCASE("the frozen file itself runs too") {
    const fs::path by_file = run_protocol(lab.options({}, (lab.root / "protocol.yaml").string()));
    CHECK(read_report(by_file).at("protocol").at("hash") == lab.hash);
  }
}

TEST_CASE("a failing measure leaves no report and a run-aborted ledger entry") {
  temp_lab lab;
  lab.freeze();
  fake_plants plants;
  plants.throw_in_measure = "planted device failure";
  try {
    (void)lab.run(plants);
    FAIL("run_protocol did not throw");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::failure);
    CHECK(std::string(e.what()) == "planted device failure");
  }
  CHECK(no_report_written(lab));
  const auto starts = events(lab, ledger_event::run_start);
  const auto aborts = events(lab, ledger_event::run_aborted);
  REQUIRE(starts.size() == 1);
  REQUIRE(aborts.size() == 1);
  CHECK(aborts[0].at("run_id") == starts[0].at("run_id"));
  CHECK(aborts[0].at("reason") == "planted device failure");
  CHECK(aborts[0].at("attempt") == 1);
  CHECK(events(lab, ledger_event::run_complete).empty());
  // the aborted run still counts: the next run is attempt 2
  CHECK(read_report(lab.run()).at("attempt") == 2);
}

TEST_CASE("run refuses on integrity before starting, and writes no report") {
  temp_lab lab;
  lab.freeze();
  const std::string yaml = test_protocol_yaml;
  std::string target;
  std::string expected;

  SUBCASE("an unfrozen file") {
    std::string other = yaml;
    other.replace(other.find("id: fake_ln"), 11, "id: other_ln");
    write_file_atomic(lab.root / "other.yaml", other);
    target = (lab.root / "other.yaml").string();
    expected = "is not frozen";
  }
  SUBCASE("a cosmetically changed file") {
    write_file_atomic(lab.root / "cosmetic.yaml", "# a comment added after freezing\n" + yaml);
    target = (lab.root / "cosmetic.yaml").string();
    expected = "changed cosmetically";
  }
  SUBCASE("a file changed in substance") {
    std::string changed = yaml;
    changed.replace(changed.find("repetitions: 20"), 15, "repetitions: 21");
    write_file_atomic(lab.root / "changed.yaml", changed);
    target = (lab.root / "changed.yaml").string();
    expected = "measurement.repetitions";
  }
  SUBCASE("an unknown hash") {
    target = std::string(64, 'a');
    expected = "no frozen protocol";
  }
  SUBCASE("a tampered stored protocol.json") {
    const fs::path stored = lab.st().protocol_dir(lab.hash) / "protocol.json";
    std::string bytes = read_file(stored);
    bytes.replace(bytes.find("Fake LayerNorm"), 14, "Fake LayerNorX");
    write_file_atomic(stored, bytes);
    target = lab.hash;
    expected = "corrupted";
  }
  REQUIRE(!target.empty());
  try {
    (void)run_protocol(lab.options({}, target));
    FAIL("run_protocol did not refuse");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::integrity);
    CHECK_MESSAGE(std::string(e.what()).find(expected) != std::string::npos, e.what());
  }
  CHECK(no_report_written(lab));
  CHECK(events(lab, ledger_event::run_start).empty());
}

TEST_CASE("planted defects show up with their exact codes") {
  temp_lab lab;
  lab.freeze();
  fake_plants plants;
  std::string code;
  std::vector<json> cells; // the cells the defect must name (empty: a run-level defect)
  bool verdicts_inconclusive = false;

  SUBCASE("above-ceiling: a ceiling lower than what the cells achieve") {
    plants.instrument.ceiling_gbps = 0.5;
    code = "above-ceiling";
    cells = {cell("unfused", 64), cell("unfused", 128), cell("fused", 64), cell("fused", 128)};
  }
  SUBCASE("unstable-cell") {
    plants.samples = [](const cell_key &k, std::int64_t n) {
      return k.arm == "fused" && k.rows == 128 ? unstable_samples(0.2, n)
                                               : fake_device::default_samples(k, n);
    };
    code = "unstable-cell";
    cells = {cell("fused", 128)};
    verdicts_inconclusive = true;
  }
  SUBCASE("harness-allocation") {
    plants.harness_bytes_in_window = [](const cell_key &k) -> std::uint64_t {
      return k.arm == "unfused" && k.rows == 64 ? 1024 : 0;
    };
    code = "harness-allocation";
    cells = {cell("unfused", 64)};
  }
  SUBCASE("zero-peak-memory: an arm that allocates reports 0 bytes") {
    plants.peak_bytes = [](const cell_key &k) -> std::uint64_t {
      return k.arm == "unfused" && k.rows == 64 ? 0 : 4096;
    };
    code = "zero-peak-memory";
    cells = {cell("unfused", 64)};
  }
  SUBCASE("timer-resolution") {
    plants.instrument.timer_resolution_ms = 0.01; // threshold 0.2 ms: only fused 64 (0.1 ms)
    code = "timer-resolution";
    cells = {cell("fused", 64)};
  }
  SUBCASE("clock-throttle") {
    plants.clock_mhz = [](const cell_key &k) {
      return k.arm == "fused" && k.rows == 128 ? 2000.0 : 3000.0;
    };
    code = "clock-throttle";
    cells = {cell("fused", 128)};
  }
  SUBCASE("device-contention") {
    plants.other_processes = json::array({{{"pid", 4242}, {"name", "other-job"}}});
    code = "device-contention";
  }
  SUBCASE("drift") {
    plants.samples = [](const cell_key &k, std::int64_t n) {
      return k.arm == "unfused" && k.rows == 64 ? drifting_samples(0.2, n)
                                                : fake_device::default_samples(k, n);
    };
    code = "drift";
    cells = {cell("unfused", 64)};
  }
  SUBCASE("flush-too-small") {
    plants.instrument.flush_bytes = plants.instrument.llc_bytes; // needs 2 x llc
    code = "flush-too-small";
  }
  SUBCASE("correctness-failure") {
    plants.failing_arms = {"fused"};
    code = "correctness-failure";
    cells = {cell("fused", 64), cell("fused", 128)};
    verdicts_inconclusive = true;
  }
  REQUIRE(!code.empty());

  const json report = read_report(lab.run(plants));
  const auto found = defects_with(report, code);
  if (cells.empty()) {
    REQUIRE(found.size() == 1);
    CHECK_FALSE(found[0].contains("cell"));
  } else {
    REQUIRE(found.size() == cells.size());
    for (std::size_t i = 0; i < cells.size(); ++i)
      CHECK(found[i].at("cell") == cells[i]);
  }
  for (const auto &d : found) {
    CHECK(d.at("message").is_string());
    CHECK(d.at("evidence").is_object());
  }
  // the planted defect is the only one (nothing else was planted)
  for (const auto &d : report.at("defects"))
    CHECK(d.at("code") == code);
  for (const auto &p : report.at("predictions")) {
    if (verdicts_inconclusive)
      CHECK(p.at("verdict") == "inconclusive");
  }
  if (code == "unstable-cell") {
    CHECK(has_flag(cell_entry(report, "fused", 128), "unstable"));
    CHECK(prediction(report, "P1").at("reason").get<std::string>().find("unstable") !=
          std::string::npos);
  }
  if (code == "correctness-failure") {
    CHECK(has_flag(cell_entry(report, "fused", 64), "correctness-failure"));
    CHECK(prediction(report, "P1").at("reason").get<std::string>().find("correctness") !=
          std::string::npos);
  }
  if (code == "above-ceiling") // kept as measured, never clipped
    CHECK(cell_entry(report, "unfused", 64).at("pct_ceiling").get<double>() > 100.0);
  if (code == "drift" || code == "timer-resolution" || code == "clock-throttle" ||
      code == "harness-allocation" || code == "device-contention" || code == "flush-too-small")
    CHECK(prediction(report, "P1").at("verdict") == "confirmed"); // these do not block verdicts
}

TEST_CASE("deviations: an excluded arm, a changed device, a skipped cell") {
  temp_lab lab;
  lab.freeze();

  SUBCASE("an arm that fails correctness is arm-excluded") {
    fake_plants plants;
    plants.failing_arms = {"unfused"};
    const json report = read_report(lab.run(plants));
    std::vector<json> excluded;
    for (const auto &d : report.at("deviations"))
      if (d.at("kind") == "arm-excluded")
        excluded.push_back(d);
    REQUIRE(excluded.size() == 2);
    CHECK(excluded[0].at("cell") == cell("unfused", 64));
    CHECK(excluded[1].at("cell") == cell("unfused", 128));
  }
  SUBCASE("a device other than an earlier run's is device-changed") {
    fake_plants first;
    first.device_name = "Fake Device A";
    const json r1 = read_report(lab.run(first));
    for (const auto &d : r1.at("deviations"))
      CHECK(d.at("kind") != "device-changed");
    fake_plants second;
    second.device_name = "Fake Device B";
    const json r2 = read_report(lab.run(second));
    std::vector<json> changed;
    for (const auto &d : r2.at("deviations"))
      if (d.at("kind") == "device-changed")
        changed.push_back(d);
    REQUIRE(changed.size() == 1);
    CHECK(changed[0].at("previous_device") == "Fake Device A");
    CHECK(changed[0].at("device") == "Fake Device B");
    CHECK(r2.at("attempt") == 2);
  }
  SUBCASE("buffers the device cannot allocate: the cells are skipped, the run goes on") {
    fake_plants plants;
    plants.max_allocation = 100 * 1024; // a 128 x 256 fp32 tensor (128 KiB) does not fit
    const json report = read_report(lab.run(plants));
    CHECK(report.at("cells").size() == 2); // the 64-row cells
    for (const auto &c : report.at("cells"))
      CHECK(c.at("rows") == 64);
    std::vector<json> skipped, excluded, errors;
    for (const auto &d : report.at("deviations")) {
      if (d.at("kind") == "cell-skipped")
        skipped.push_back(d);
      if (d.at("kind") == "arm-excluded")
        excluded.push_back(d);
      if (d.at("kind") == "arm-error")
        errors.push_back(d);
    }
    REQUIRE(skipped.size() == 2);
    for (const auto &d : skipped) {
      CHECK(d.at("cell").at("rows") == 128);
      CHECK(d.at("message").get<std::string>().rfind(
                "buffers for this shape could not be allocated: ", 0) == 0);
    }
    CHECK(excluded.size() == 2); // their correctness could not run either
    CHECK(errors.empty());
    CHECK(prediction(report, "P1").at("verdict") == "inconclusive");
  }
  SUBCASE("a cell the backend cannot run is skipped and recorded") {
    fake_plants plants;
    plants.cannot_run = [](const arm_info &arm, pass_kind, std::int64_t rows,
                           std::int64_t) -> std::optional<std::string> {
      if (arm.name == "layernorm.unfused" && rows == 128)
        return "would not fit (planted)";
      return std::nullopt;
    };
    const json report = read_report(lab.run(plants));
    CHECK(report.at("cells").size() == 3);
    std::vector<json> skipped;
    for (const auto &d : report.at("deviations"))
      if (d.at("kind") == "cell-skipped")
        skipped.push_back(d);
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0].at("cell") == cell("unfused", 128));
    CHECK(skipped[0].at("message") == "would not fit (planted)");
    CHECK(prediction(report, "P1").at("verdict") == "inconclusive");
  }
}
