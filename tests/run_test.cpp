// The run engine end to end on the fake backend: report folder, ledger, refusals, planted
// defects with their exact codes, and deviations.
#include "fake_device.hpp"

#include "audit/audit.hpp"
#include "base/fs.hpp"
#include "crypto/crypto.hpp"
#include "report/report.hpp"
#include "run/run.hpp"
#include "store/ledger.hpp"
#include "store/store.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
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
  CHECK(std::regex_match(
      dir.filename().string(),
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

  SUBCASE("the phases: the run's steps around the engine's, adding up to its wall time") {
    const report_document doc = report_from_json(report, "report.json");
    REQUIRE(doc.phases.has_value());
    std::vector<std::string> names;
    for (const auto &p : doc.phases->list)
      names.push_back(p.name);
    CHECK(names == std::vector<std::string>{"start", "arm binding", "correctness", "instrument",
                                            "timing", "finish", "measuring side", "analysis"});
    CHECK(phases_problem(*doc.phases).empty());
    CHECK(doc.phases->wall_ms > 0);
    std::vector<std::string> parts;
    for (const auto &p : doc.phases->timing)
      parts.push_back(p.name);
    CHECK(parts == std::vector<std::string>{"group setup", "warm-up windows", "timed windows",
                                            "input refresh", "spot checks", "kernel records"});
    CHECK(read_file(dir / "report.md").find("## Where the time went") != std::string::npos);
  }
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

TEST_CASE("a file that differs from the frozen source only in comments or formatting is that "
          "protocol") {
  temp_lab lab;
  lab.freeze();
  const std::string cosmetic = std::string("# a comment added after freezing\n") +
                               test_protocol_yaml + "# and one at the end\n";
  write_file_atomic(lab.root / "cosmetic.yaml", cosmetic);
  const std::string target = (lab.root / "cosmetic.yaml").string();

  const frozen_protocol fp = resolve_for_run(lab.st(), target);
  CHECK(fp.hash == lab.hash);
  CHECK(fp.note.find("only in comments or formatting") != std::string::npos);
  // Freezing it writes nothing and says why.
  const freeze_outcome again =
      lab.st().freeze(cosmetic, parse_protocol(cosmetic, "cosmetic.yaml"), lab.key());
  CHECK(again.already_frozen);
  CHECK(again.cosmetic_only);
  CHECK(again.hash == lab.hash);
  // And it runs, as the frozen protocol.
  const fs::path dir = run_protocol(lab.options({}, target));
  CHECK(read_report(dir).at("protocol").at("hash") == lab.hash);
  CHECK(events(lab, ledger_event::run_complete).size() == 1);
}

TEST_CASE("run targets: a hash, a prefix of at least 8 hex digits, or the protocol id") {
  temp_lab lab;
  lab.freeze();
  const store s = lab.st();
  CHECK(s.resolve(lab.hash) == lab.hash);
  CHECK(s.resolve(lab.hash.substr(0, 8)) == lab.hash);
  CHECK(s.resolve("fake_ln") == lab.hash);
  const auto refused = [&](const std::string &arg, exit_code code, const std::string &part) {
    CAPTURE(arg);
    try {
      (void)s.resolve(arg);
      FAIL("resolve accepted " << arg);
    } catch (const error &e) {
      CHECK(e.code() == code);
      CHECK_MESSAGE(std::string(e.what()).find(part) != std::string::npos, e.what());
    }
  };
  // A short prefix could silently start a permanently recorded run of the wrong protocol.
  refused(lab.hash.substr(0, 1), exit_code::invalid, "at least 8 hex digits");
  refused(lab.hash.substr(0, 7), exit_code::invalid, "at least 8 hex digits");
  refused("Fake_LN", exit_code::invalid, "not a protocol hash");
  refused("other_id", exit_code::integrity, "no frozen protocol other_id");
  refused(std::string(64, 'a'), exit_code::integrity, "no frozen protocol");

  SUBCASE("two frozen versions of one id: the id names the newest revision, with a note") {
    std::string v2 = test_protocol_yaml;
    v2.replace(v2.find("prereg: 1"), 9, "prereg: 2\nrevision: 2");
    v2.replace(v2.find("shapes:"), 7, "axes:");
    const std::string first = lab.hash;
    const std::string second = lab.freeze(v2);
    CHECK(second != first);
    // Each version listed with its revision and freeze time, oldest first.
    const auto versions = s.versions_of("fake_ln");
    REQUIRE(versions.size() == 2);
    CHECK(versions[0].hash == first);
    CHECK(versions[1].hash == second);
    CHECK(versions[0].revision == 1);
    CHECK(versions[1].revision == 2);
    CHECK_FALSE(versions[0].frozen_at.empty());
    CHECK(versions[0].frozen_at <= versions[1].frozen_at);
    std::string note;
    CHECK(s.resolve("fake_ln", &note) == second);
    CHECK(note == fmt::format("protocol fake_ln has 2 frozen versions: taking the newest revision, "
                              "2 ({}, frozen {}); give a hash or a prefix for another: {} "
                              "(revision 1, frozen {})",
                              second.substr(0, 12), versions[1].frozen_at, first.substr(0, 12),
                              versions[0].frozen_at));
    CHECK(s.versions_of("other_id").empty());
    CHECK(s.resolve(second.substr(0, 10)) == second);
  }
  SUBCASE("two versions of the highest revision: the id alone is ambiguous") {
    std::string v2 = test_protocol_yaml;
    v2.replace(v2.find("prereg: 1"), 9, "prereg: 2");
    v2.replace(v2.find("shapes:"), 7, "axes:");
    const std::string first = lab.hash;
    const std::string second = lab.freeze(v2); // prereg: 2 normalises otherwise: a new hash
    REQUIRE(second != first);
    const auto versions = s.versions_of("fake_ln");
    REQUIRE(versions.size() == 2);
    refused("fake_ln", exit_code::invalid,
            fmt::format("2 versions of protocol fake_ln are frozen: {} (revision 1, frozen {}), "
                        "{} (revision 1, frozen {}); revision 1 is frozen more than once, so the "
                        "id alone names none of them: give a hash or a prefix",
                        first.substr(0, 12), versions[0].frozen_at, second.substr(0, 12),
                        versions[1].frozen_at));
  }
}

TEST_CASE("a kernel changed since freezing: refused, with the way to a new version") {
  temp_lab lab;
  lab.freeze();
  frozen_protocol fp = lab.st().load(lab.hash);
  CHECK_FALSE(kernel_source_problem(fp, lab.st().project_root()));
  fp.freeze["kernels"]["fused"]["source_sha256"] = std::string(64, '0');
  const auto problem = kernel_source_problem(fp, lab.st().project_root());
  REQUIRE(problem);
  CHECK(problem->find("kernel layernorm.fused source changed since freezing") != std::string::npos);
  CHECK(problem->find("this version stays refused") != std::string::npos);
  CHECK(problem->find("set `revision: 2`") != std::string::npos);
  CHECK(problem->find("write `prereg: 2` and rename `shapes:` to `axes:`") != std::string::npos);
  try {
    check_kernel_sources(fp, lab.st().project_root());
    FAIL("a changed kernel was accepted");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::integrity);
  }
  fp.proto.schema = 2;
  fp.proto.revision = 4;
  const auto v2 = kernel_source_problem(fp, lab.st().project_root());
  REQUIRE(v2);
  CHECK(v2->find("set `revision: 5`") != std::string::npos);
  CHECK(v2->find("rename") == std::string::npos);
}

TEST_CASE("prereg try: an EXPLORATORY report, unsigned and outside the ledger; audit refuses it") {
  temp_lab lab;
  write_file_atomic(lab.root / "draft.yaml", test_protocol_yaml);
  run_options o = lab.options({}, (lab.root / "draft.yaml").string());
  o.out_dir = lab.root / "exploratory";
  const fs::path dir = try_protocol(o);
  CHECK(dir.parent_path() == lab.root / "exploratory" / "fake_ln");
  CHECK(dir.filename().string().rfind("EXPLORATORY-", 0) == 0);
  const json report = read_report(dir);
  CHECK(report.at("exploratory") == true);
  CHECK(report.at("attempt") == 0);
  CHECK(report.at("protocol").at("freeze").contains("exploratory"));
  CHECK_FALSE(report.at("protocol").at("freeze").contains("signature"));
  CHECK(report.at("cells").size() == 4);
  CHECK_FALSE(fs::exists(dir / "report.dsse.json"));
  CHECK(read_file(dir / "report.md").rfind("# EXPLORATORY: ", 0) == 0);
  CHECK(read_file(dir / "report.html").find("<p class=\"exploratory\">EXPLORATORY:") !=
        std::string::npos);
  // Nothing in any store: no ledger, no key, no frozen protocol.
  CHECK_FALSE(fs::exists(lab.store_root));
  // The report model reads it back, and the audit refuses it as confirmatory.
  CHECK(report_from_json(report, "report.json").exploratory);
  const audit_result r = audit_report(dir, lab.st(), std::vector<public_key>{});
  CHECK_FALSE(r.passed());
  CHECK(r.exit() == exit_code::audit_failed);
  REQUIRE(r.checks.size() == 1);
  CHECK(r.checks[0].name == "exploratory");
  CHECK(r.checks[0].detail.find("not audited as a confirmatory report") != std::string::npos);
}

namespace {

// Planted arms for the measuring process: one that fails where the child still sees
// PREREG_KEY, one that kills its own process.
void key_blind_forward(const norm_tensors &t, step_allocator &a, void *stream) {
  if (std::getenv("PREREG_KEY") != nullptr)
    throw std::runtime_error("the measuring process sees PREREG_KEY");
  builtin_arm_code(*find_arm("cpu", "layernorm.fused")).norm->forward(t, a, stream);
}
void suicidal_forward(const norm_tensors &, step_allocator &, void *) { ::raise(SIGKILL); }
const arm_ops key_blind_ops{&key_blind_forward, nullptr};
const arm_ops suicidal_ops{&suicidal_forward, nullptr};

} // namespace

TEST_CASE("the measuring process: a forked child without the key measures; its death is a failed "
          "attempt") {
  temp_lab lab;
  lab.freeze();
  ::setenv("PREREG_KEY", lab.key_path.c_str(), 1);
  run_options in_process = lab.options();
  const json plain = read_report(run_protocol(in_process));

  run_options o = lab.options();
  o.isolate = true;
  const auto in_process_resolver = o.resolve_arm;
  o.resolve_arm = [in_process_resolver](const arm_spec &a, const arm_info &info) {
    return a.id == "fused" ? arm_code{&key_blind_ops, nullptr} : in_process_resolver(a, info);
  };
  const json isolated = read_report(run_protocol(o));
  // The parent analysed and signed what the child measured: the same facts as in-process.
  CHECK(isolated.at("deviations").empty());
  REQUIRE(isolated.at("cells").size() == plain.at("cells").size());
  for (std::size_t i = 0; i < plain.at("cells").size(); ++i) {
    CHECK(isolated["cells"][i].at("samples_ms") == plain["cells"][i].at("samples_ms"));
    CHECK(isolated["cells"][i].at("peak_bytes") == plain["cells"][i].at("peak_bytes"));
    CHECK(isolated["cells"][i].at("error").is_null());
  }
  CHECK(isolated.at("correctness") == plain.at("correctness"));
  CHECK(isolated.at("predictions") == plain.at("predictions"));
  // The isolated run records its walls; the in-process one has none to record.
  REQUIRE(isolated.at("run").contains("isolation"));
  CHECK_FALSE(isolated.at("run").at("isolation").at("layers").empty());
  CHECK_FALSE(plain.at("run").contains("isolation"));
  CHECK(events(lab, ledger_event::run_complete).size() == 2);

  // A child that dies: exit 1, nothing written, the ledger records the failed attempt.
  o.resolve_arm = [in_process_resolver](const arm_spec &a, const arm_info &info) {
    return a.id == "fused" ? arm_code{&suicidal_ops, nullptr} : in_process_resolver(a, info);
  };
  const auto reports_before = std::distance(fs::recursive_directory_iterator(lab.out_dir),
                                            fs::recursive_directory_iterator());
  try {
    (void)run_protocol(o);
    FAIL("run_protocol did not throw");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::failure);
    CHECK(std::string(e.what()).find("was killed by signal 9") != std::string::npos);
  }
  ::unsetenv("PREREG_KEY");
  CHECK(std::distance(fs::recursive_directory_iterator(lab.out_dir),
                      fs::recursive_directory_iterator()) == reports_before);
  const auto aborts = events(lab, ledger_event::run_aborted);
  REQUIRE(aborts.size() == 1);
  CHECK(aborts[0].at("attempt") == 3);
  CHECK(aborts[0].at("reason").get<std::string>().find("the measuring process (pid ") == 0);
}

TEST_CASE("guards in the report: off-window work, warm-up until settled, first-call time") {
  temp_lab lab;
  lab.freeze();
  fake_plants plants;
  // The unfused arm leaves 1 ms of work pending after each window at 128 rows; 0.001 ms
  // elsewhere (under the 0.05 ms threshold).
  plants.off_window_ms = [](const cell_key &k) {
    return k.arm == "unfused" && k.rows == 128 ? 1.0 : 0.001;
  };
  // Warm-up times: the fused arm settles after a compile-like first few; the unfused arm at
  // 64 rows never settles (hits the cap).
  plants.warmup_ms = [](const cell_key &k, std::size_t i) {
    if (k.arm == "fused")
      return i < 4 ? 10.0 / static_cast<double>(i + 1) : 0.1;
    if (k.rows == 64)
      return i % 2 == 0 ? 0.1 : 0.3;
    return 0.1;
  };
  const json report = read_report(lab.run(plants));
  CHECK(report.at("schema_version") == 5);
  const auto off = defects_with(report, "off-window-work");
  REQUIRE(off.size() == 1);
  CHECK(off[0].at("cell") == cell("unfused", 128));
  CHECK(off[0].at("evidence").at("off_window_ms") == doctest::Approx(1.0));
  CHECK(off[0].at("evidence").at("threshold_ms") ==
        doctest::Approx(std::max(
            0.05, 0.1 * cell_entry(report, "unfused", 128).at("median_ms").get<double>())));
  CHECK(cell_entry(report, "unfused", 64).at("off_window_ms") == doctest::Approx(0.001));
  // warmup: 2 in the protocol. Fused: 10, 5, 3.3, 2.5, 0.1, 0.1, 0.1 -> 7 windows; unfused
  // 64: never settles -> 2 + 16 (the cap); unfused 128: steady -> 3 (the minimum to judge).
  CHECK(cell_entry(report, "fused", 64).at("warmup_calls") == 7);
  CHECK(cell_entry(report, "fused", 128).at("warmup_calls") == 7);
  CHECK(cell_entry(report, "unfused", 64).at("warmup_calls") == 18);
  CHECK(cell_entry(report, "unfused", 128).at("warmup_calls") == 3);
  for (const auto &c : report.at("cells")) {
    REQUIRE(c.at("first_call_ms").is_number());
    CHECK(c.at("first_call_ms").get<double>() >= 0);
  }
  // Without the plant the fake (like the CPU) cannot tell: null, and no defect.
  const json plain = read_report(lab.run());
  CHECK(defects_with(plain, "off-window-work").empty());
  CHECK(cell_entry(plain, "fused", 64).at("off_window_ms").is_null());
}
