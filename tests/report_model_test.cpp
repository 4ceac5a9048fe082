// Tests of the report model: every committed report re-serialises to its signed bytes, and the
// parser rejects what the format does not allow, naming the JSON path.
#include "model/report_model.hpp"

#include "base/fs.hpp"
#include "prereg/error.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace prereg;

namespace {

/// reports/*/*/report.json of the repository, sorted.
// Every committed run report: a merged report (docs/scale-out.md, its own format with
// `merge_version`, audited by `prereg audit`) stands for the run reports it keeps under parts/.
std::vector<fs::path> committed_reports() {
  std::vector<fs::path> out;
  const auto add_runs = [&](const fs::path &root, const auto &self) -> void {
    for (const auto &proto : fs::directory_iterator(root))
      if (proto.is_directory())
        for (const auto &run : fs::directory_iterator(proto.path())) {
          const fs::path f = run.path() / "report.json";
          if (!fs::is_regular_file(f))
            continue;
          if (read_file(f).find("\"merge_version\"") != std::string::npos)
            self(run.path() / "parts", self);
          else
            out.push_back(f);
        }
  };
  add_runs(fs::path(PREREG_SOURCE_DIR) / "reports", add_runs);
  std::sort(out.begin(), out.end());
  return out;
}

json sample(const std::string &name) {
  const fs::path p = fs::path(PREREG_TEST_DATA) / "reports" / name;
  return parse_json_strict(read_file(p), p.string());
}

/// The message of the error report_from_json throws for `j`, or "(no error)".
std::string rejection(const json &j) {
  try {
    (void)report_from_json(j, "report.json");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::invalid);
    CHECK(e.where() == "report.json");
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("every committed report parses and re-serialises to its signed bytes") {
  const auto files = committed_reports();
  REQUIRE(files.size() >= 7);
  for (const auto &f : files) {
    CAPTURE(f.string());
    const std::string bytes = read_file(f);
    const report_document r = report_from_json(parse_json_strict(bytes, f.string()), f.string());
    REQUIRE(r.schema_version >= 1);
    REQUIRE(r.schema_version <= report_schema_version);
    CHECK(canonical_json(to_json(r)) == bytes);
    for (const auto &c : r.cells) {
      // Version 2 cells carry the raw clock and harness bytes; version 1 cells do not.
      CHECK(c.clock_mhz.has_value() == (r.schema_version >= 2));
      CHECK(c.harness_bytes_in_window.has_value() == (r.schema_version >= 2));
      CHECK(c.n == c.samples_ms.size());
      // Version 4 cells of a run with a kernel clock carry one kernel time per sample.
      if (c.kernel_clock)
        CHECK(c.kernel_clock->kernel_ms.size() == c.samples_ms.size());
    }
  }
}

TEST_CASE("the test reports parse and round-trip") {
  for (const char *name : {"cpu_rmsnorm.json", "cuda_layernorm.json"}) {
    CAPTURE(name);
    const json j = sample(name);
    const report_document r = report_from_json(j, name);
    CHECK(to_json(r) == j);
    CHECK_FALSE(r.cells.empty());
  }
  const report_document r = report_from_json(sample("cuda_layernorm.json"), "x");
  bool has_run_defect = false;
  for (const auto &d : r.defects)
    has_run_defect = has_run_defect || !d.cell;
  CHECK(has_run_defect); // device-contention names no cell
  bool has_cell_deviation = false;
  for (const auto &d : r.deviations)
    has_cell_deviation = has_cell_deviation || d.cell.has_value();
  CHECK(has_cell_deviation);
}

TEST_CASE("version 2: cells carry clock_mhz and harness_bytes_in_window") {
  json j = sample("cpu_rmsnorm.json");
  j["schema_version"] = 2;
  SUBCASE("required in every cell") {
    CHECK(rejection(j) == "cells[0].clock_mhz is missing");
    for (auto &c : j["cells"])
      c["clock_mhz"] = 1980.5;
    CHECK(rejection(j) == "cells[0].harness_bytes_in_window is missing");
  }
  SUBCASE("null clock (not read), a byte count, and the round trip") {
    for (auto &c : j["cells"]) {
      c["clock_mhz"] = nullptr;
      c["harness_bytes_in_window"] = 0;
    }
    j["cells"][1]["clock_mhz"] = 1410.0;
    j["cells"][1]["harness_bytes_in_window"] = 4096;
    const report_document r = report_from_json(j, "x");
    REQUIRE(r.cells[0].clock_mhz.has_value());
    CHECK(std::isnan(*r.cells[0].clock_mhz));
    CHECK(*r.cells[1].clock_mhz == 1410.0);
    CHECK(*r.cells[1].harness_bytes_in_window == 4096);
    CHECK(to_json(r) == j);
    CHECK(canonical_json(to_json(report_from_json(to_json(r), "x"))) == canonical_json(j));
  }
  SUBCASE("a negative or fractional byte count is rejected") {
    for (auto &c : j["cells"]) {
      c["clock_mhz"] = nullptr;
      c["harness_bytes_in_window"] = 0;
    }
    j["cells"][2]["harness_bytes_in_window"] = -1;
    CHECK(rejection(j) == "cells[2].harness_bytes_in_window is not a non-negative integer");
    j["cells"][2]["harness_bytes_in_window"] = 1.5;
    CHECK(rejection(j) == "cells[2].harness_bytes_in_window is not a non-negative integer");
  }
}

TEST_CASE("version 3: cells also carry first_call_ms, warmup_calls and off_window_ms") {
  json j = sample("cpu_rmsnorm.json");
  j["schema_version"] = 3;
  for (auto &c : j["cells"]) {
    c["clock_mhz"] = nullptr;
    c["harness_bytes_in_window"] = 0;
  }
  CHECK(rejection(j) == "cells[0].first_call_ms is missing");
  for (auto &c : j["cells"])
    c["first_call_ms"] = 12.5;
  CHECK(rejection(j) == "cells[0].warmup_calls is missing");
  for (auto &c : j["cells"])
    c["warmup_calls"] = 3;
  CHECK(rejection(j) == "cells[0].off_window_ms is missing");
  for (auto &c : j["cells"])
    c["off_window_ms"] = nullptr;
  j["cells"][1]["off_window_ms"] = 0.25;
  j["cells"][1]["first_call_ms"] = nullptr;
  const report_document r = report_from_json(j, "x");
  CHECK(*r.cells[0].first_call_ms == 12.5);
  CHECK(*r.cells[0].warmup_calls == 3);
  CHECK(std::isnan(*r.cells[0].off_window_ms));
  CHECK(*r.cells[1].off_window_ms == 0.25);
  CHECK(std::isnan(*r.cells[1].first_call_ms));
  CHECK(to_json(r) == j);
  j["cells"][2]["warmup_calls"] = -1;
  CHECK(rejection(j) == "cells[2].warmup_calls is not a non-negative integer");
  // A version-2 cell may not carry them.
  j["schema_version"] = 2;
  j["cells"][2]["warmup_calls"] = 3;
  CHECK(rejection(j) == "cells[0].first_call_ms is not a member of the report format");
}

TEST_CASE("the parser names the JSON path of what it rejects") {
  const json good = sample("cpu_rmsnorm.json");
  REQUIRE(rejection(good) == "(no error)");
  const auto with = [&](auto edit) {
    json j = good;
    edit(j);
    return rejection(j);
  };
  CHECK(rejection(json::array()) == "report is not an object");
  CHECK(with([](json &j) { j["cells"][3]["samples_ms"][2] = "fast"; }) ==
        "cells[3].samples_ms[2] is not a number");
  CHECK(with([](json &j) { j["cells"][0].erase("median_ms"); }) == "cells[0].median_ms is missing");
  CHECK(with([](json &j) { j["cells"][0]["median_ms"] = "1"; }) ==
        "cells[0].median_ms is not a number or null");
  CHECK(with([](json &j) { j["cells"][0]["pass"] = "bwd"; }) ==
        "cells[0].pass is 'bwd', not fwd or fwd+bwd");
  CHECK(with([](json &j) { j["cells"][0]["bound"] = "compute"; }) ==
        "cells[0].bound is 'compute', not launch, bandwidth or neither");
  CHECK(with([](json &j) { j["cells"][0]["clock_mhz"] = 1000; }) ==
        "cells[0].clock_mhz is not a member of the report format");
  CHECK(with([](json &j) { j["cells"][0]["rows"] = 1.5; }) == "cells[0].rows is not an integer");
  CHECK(with([](json &j) { j["cells"][0]["error"] = 7; }) == "cells[0].error is not a string");
  CHECK(with([](json &j) { j["cells"][0]["flags"][0] = 1; }) ==
        "cells[0].flags[0] is not a string");
  CHECK(with([](json &j) { j["predictions"][0]["verdict"] = "maybe"; }) ==
        "predictions[0].verdict is 'maybe', not confirmed, refuted or inconclusive");
  CHECK(with([](json &j) { j["predictions"][0]["cells"][0]["p"] = "high"; }) ==
        "predictions[0].cells[0].p is not a number");
  CHECK(with([](json &j) { j["correctness"][0]["passed"] = 1; }) ==
        "correctness[0].passed is not a boolean");
  CHECK(with([](json &j) { j["instrument"]["ceiling_bytes"] = -4; }) ==
        "instrument.ceiling_bytes is not a non-negative integer");
  CHECK(with([](json &j) { j["instrument"]["ceiling_samples_gbps"][0] = nullptr; }) ==
        "instrument.ceiling_samples_gbps[0] is not a number");
  CHECK(with([](json &j) { j["run"]["host"] = "x"; }) ==
        "run.host is not a member of the report format");
  CHECK(with([](json &j) { j["tool"].erase("git_commit"); }) == "tool.git_commit is missing");
  CHECK(with([](json &j) { j["protocol"]["body"] = 1; }) == "protocol.body is not an object");
  CHECK(with([](json &j) { j["defects"] = json::object(); }) == "defects is not an array");
  CHECK(with([](json &j) {
          j["defects"] = json::array({{{"code", "drift"}, {"message", "m"}, {"evidence", 1}}});
        }) == "defects[0].evidence is not an object");
  CHECK(with([](json &j) {
          j["deviations"] = json::array({{{"kind", "cell-skipped"},
                                          {"message", "m"},
                                          {"cell", {{"arm", "a"}, {"pass", "fwd"}}}}});
        }) == "deviations[0].cell.rows is missing");
  CHECK(with([](json &j) { j["schema_version"] = report_schema_version_max + 1; }) ==
        fmt::format("schema_version is {}; this build reads versions 1 to {}",
                    report_schema_version_max + 1, report_schema_version_max));
  CHECK(with([](json &j) { j["attempt"] = "1"; }) == "attempt is not an integer");
  CHECK(with([](json &j) { j["extra"] = true; }) == "extra is not a member of the report format");
}

TEST_CASE("version 4: kernel_clock.graph_kernels, one count per sample, none above the kernels") {
  const fs::path p = fs::path(PREREG_SOURCE_DIR) / "reports" / "ncu_agreement" /
                     "20261201T162651Z-3174bd923663-d82576" / "report.json";
  const json good = parse_json_strict(read_file(p), p.string());
  REQUIRE(good.at("cells")[0].contains("kernel_clock"));
  const json &kernels = good.at("cells")[0].at("kernel_clock").at("kernels");
  const auto with = [&](const json &graph) {
    json j = good;
    j["cells"][0]["kernel_clock"]["graph_kernels"] = graph;
    return rejection(j);
  };
  json same = json::array();
  for (const auto &k : kernels)
    same.push_back(k);
  CHECK(with(same) == "(no error)"); // every kernel a graph node
  const report_document doc = [&] {
    json j = good;
    j["cells"][0]["kernel_clock"]["graph_kernels"] = same;
    return report_from_json(j, "report.json");
  }();
  CHECK(doc.cells[0].kernel_clock->graph_kernels.size() == kernels.size());
  CHECK(to_json(doc).at("cells")[0].at("kernel_clock").at("graph_kernels") == same);
  json above = same;
  above[1] = kernels[1].get<std::int64_t>() + 1;
  CHECK(with(above) == "cells[0].kernel_clock.graph_kernels[1] is more than the sample's kernels");
  json short_by_one = same;
  short_by_one.erase(short_by_one.size() - 1);
  CHECK(with(short_by_one) == fmt::format("cells[0].kernel_clock.graph_kernels has {} values for "
                                          "{} samples",
                                          kernels.size() - 1, kernels.size()));
  json negative = same;
  negative[0] = -1;
  CHECK(with(negative).find("cells[0].kernel_clock.graph_kernels[0]") == 0);
}

TEST_CASE("a deviation keeps its kind's own members") {
  json j = sample("cpu_rmsnorm.json");
  j["deviations"] = json::array({{{"kind", "device-changed"},
                                  {"message", "earlier runs used A, this one B"},
                                  {"previous_device", "A"},
                                  {"device", "B"}}});
  const report_document r = report_from_json(j, "x");
  REQUIRE(r.deviations.size() == 1);
  CHECK_FALSE(r.deviations[0].cell.has_value());
  CHECK(r.deviations[0].extra == json{{"previous_device", "A"}, {"device", "B"}});
  CHECK(to_json(r) == j);
}

TEST_CASE("parsing some members only") {
  json j = sample("cpu_rmsnorm.json");
  j["cells"][0]["samples_ms"][0] = "fast";
  j["note"] = 1;
  const report_document r = report_from_json(j, "x", report_part::protocol | report_part::run);
  CHECK(r.protocol.body.at("id") == "rms_cpu_smoke");
  CHECK(r.cells.empty());
  CHECK_THROWS_AS((void)report_from_json(j, "x", report_part::cells), error);
  CHECK_THROWS_AS(check_report_members(j, "x"), error);
}

TEST_CASE("tool.renderer: absent is 1, 2 to 6 are read back, others refused") {
  const json good = sample("cpu_rmsnorm.json");
  CHECK(report_renderer_version == 6);
  CHECK(report_from_json(good, "x").tool.renderer == 1);
  for (const int v : {2, 3, 4, 5, 6}) {
    json j = good;
    j["tool"]["renderer"] = v;
    const report_document r = report_from_json(j, "x");
    CHECK(r.tool.renderer == v);
    CHECK(to_json(r) == j);
  }
  for (const int v : {1, 7}) {
    json j = good;
    j["tool"]["renderer"] = v;
    CHECK(rejection(j) == "tool.renderer must be an integer from 2 to 6 (this build's renderers)");
  }
}

TEST_CASE("tool.analysis: absent is 1, 2, 3 and 4 are read back, others refused") {
  const json good = sample("cpu_rmsnorm.json");
  CHECK(report_analysis_version == 4);
  CHECK(report_from_json(good, "x").tool.analysis == 1);
  json j = good;
  for (const int v : {2, 3, 4}) {
    j["tool"]["analysis"] = v;
    const report_document r = report_from_json(j, "x");
    CHECK(r.tool.analysis == v);
    CHECK(to_json(r) == j);
  }
  for (const int v : {0, 1, 5}) {
    j["tool"]["analysis"] = v;
    CHECK(rejection(j) ==
          "tool.analysis must be an integer from 2 to 4 (this build's verdict rules)");
  }
}

TEST_CASE("run.isolation and run.arm_log: read back; a layer, a mode or a file it does not know is "
          "refused") {
  const json good = sample("cpu_rmsnorm.json");
  json j = good;
  j["run"]["isolation"] = {{"layers", {"no-inherited-fds", "user-namespace", "mount-namespace"}},
                           {"reason", "a PID namespace is not available (unshare): EPERM"}};
  j["run"]["arm_log"] = {{"file", "arm-errors.log"}, {"sha256", std::string(64, 'a')}};
  const report_document r = report_from_json(j, "x");
  REQUIRE(r.run.isolation);
  CHECK(isolation_mode(*r.run.isolation) == "namespaces");
  REQUIRE(r.run.arm_log);
  CHECK(r.run.arm_log->file == "arm-errors.log");
  CHECK(to_json(r) == j);
  CHECK_FALSE(report_from_json(good, "x").run.isolation);

  json bad = j;
  bad["run"]["isolation"]["layers"][1] = "chroot-jail";
  CHECK(rejection(bad) == "run.isolation.layers[1] is not an isolation layer");
  bad = j;
  bad["run"]["isolation"]["layers"][2] = "no-inherited-fds";
  CHECK(rejection(bad) == "run.isolation.layers[2] repeats a layer");
  bad = j;
  bad["run"]["isolation"] = {{"layers", {"no-inherited-fds"}}, {"reason", ""}};
  CHECK(rejection(bad) == "run.isolation.reason is empty for a run without isolation");
  bad = j;
  bad["run"]["arm_log"]["file"] = "../report.json";
  CHECK(rejection(bad) == "run.arm_log.file is not a file name in the report folder");
  bad = j;
  bad["run"]["arm_log"]["sha256"] = "ABC";
  CHECK(rejection(bad) == "run.arm_log.sha256 is not a SHA-256 hex digest");
}

namespace {

/// A sandboxed run's isolation (schema_version 8): every layer, each proven by its probes.
report_isolation sandboxed_isolation() {
  report_isolation i;
  i.layers = {"no-inherited-fds", "user-namespace",     "mount-namespace", "read-only-root",
              "read-only-store",  "key-masked",         "pid-namespace",   "fresh-proc",
              "mounts-locked",    "caps-dropped",       "no-new-privs",    "landlock",
              "seccomp",          "parent-not-dumpable"};
  for (const char *name :
       {"inherited-fds",      "read-key",           "write-ledger-cache", "write-store",
        "write-reports",      "write-project",      "write-home",         "unmount-key-mask",
        "clear-read-only",    "capabilities",       "no-new-privs",       "write-proc",
        "new-user-namespace", "read-parent-memory", "ptrace-parent",      "ptrace-init",
        "signal-parent",      "signal-init",        "signal-prereg",      "proc-prereg"})
    i.probes.push_back({name, "contained", "EPERM", "refused"});
  i.level = "sandboxed";
  return i;
}

} // namespace

TEST_CASE("issue 43: run.isolation's level follows from its layers and probes") {
  report_isolation i = sandboxed_isolation();
  CHECK(isolation_level(i) == "sandboxed");
  CHECK(isolation_problems(i).empty());
  CHECK(isolation_mode(i) == "sandboxed");
  SUBCASE("Landlock is optional: without it and its probe the run is still sandboxed") {
    std::erase(i.layers, "landlock");
    i.probes[11] = {"write-proc", "not-tried", "", "Landlock is not up"};
    CHECK(isolation_level(i) == "sandboxed");
    CHECK(isolation_problems(i).empty());
  }
  SUBCASE("a probe that got past its wall: partial, and the layer may not be listed") {
    i.probes[1] = {"read-key", "escaped", "", "64 bytes of the key file were read"};
    CHECK(isolation_level(i) == "partial");
    const auto problems = isolation_problems(i);
    REQUIRE(problems.size() == 2);
    CHECK(problems[0] == "layer key-masked is listed, but its probe read-key got past it (64 bytes "
                         "of the key file were read)");
    CHECK(problems[1] == "the level is sandboxed, but the layers and probes give partial");
  }
  SUBCASE("a layer listed without a probe that was contained is a claim from configuration") {
    std::erase_if(i.probes, [](const isolation_probe &p) { return p.name == "capabilities"; });
    CHECK(isolation_level(i) == "partial");
    CHECK(isolation_problems(i).front() ==
          "layer caps-dropped is listed, but no probe of it was contained");
  }
  SUBCASE("a required layer missing: partial; without the user namespace: none") {
    std::erase(i.layers, "seccomp");
    CHECK(isolation_level(i) == "partial");
    std::erase(i.layers, "user-namespace");
    CHECK(isolation_level(i) == "none");
  }
}

TEST_CASE("issue 43: schema_version 8's run.isolation reads back; probes are refused before it") {
  json j = sample("cpu_rotary.json"); // version 6: an instrument of version 4 and later
  j["schema_version"] = report_schema_version_probes;
  report_document doc = report_from_json(j, "x");
  doc.run.isolation = sandboxed_isolation();
  const json written = to_json(doc);
  REQUIRE(written.at("run").at("isolation").at("probes").size() == 20);
  CHECK(written.at("run").at("isolation").at("level") == "sandboxed");
  const report_document back = report_from_json(written, "x");
  REQUIRE(back.run.isolation);
  CHECK(back.run.isolation->probes.size() == 20);
  CHECK(to_json(back) == written);

  json bad = written;
  bad["schema_version"] = report_schema_version_state;
  CHECK(rejection(bad) == "run.isolation has probes or a level (members since schema_version 8)");
  bad = written;
  bad["run"]["isolation"]["probes"][0]["name"] = "read-ledger";
  CHECK(rejection(bad) == "run.isolation.probes[0].name is not an isolation probe");
  bad = written;
  bad["run"]["isolation"]["probes"][0]["outcome"] = "maybe";
  CHECK(rejection(bad) == "run.isolation.probes[0].outcome is not contained, escaped or not-tried");
  bad = written;
  bad["run"]["isolation"]["level"] = "namespaces";
  CHECK(rejection(bad) == "run.isolation.level is not sandboxed, partial or none");
  bad = written;
  bad["run"]["isolation"].erase("level");
  CHECK(rejection(bad) == "run.isolation.level is missing");
}

TEST_CASE("version 5: phases are read back, refused before version 5, and must add up") {
  const fs::path v4 = fs::path(PREREG_SOURCE_DIR) / "reports" / "ncu_agreement" /
                      "20261201T162651Z-3174bd923663-d82576" / "report.json";
  json j = parse_json_strict(read_file(v4), v4.string());
  REQUIRE(j.at("schema_version") == 4);
  const json phases = {{"wall_ms", 1000.0},
                       {"list", json::array({{{"name", "start"}, {"ms", 100.0}},
                                             {{"name", "timing"}, {"ms", 850.0}},
                                             {{"name", "analysis"}, {"ms", 49.5}}})},
                       {"timing", json::array({{{"name", "timed windows"}, {"ms", 300.0}}})}};
  j["phases"] = phases;
  CHECK(rejection(j) == "phases is not a member of reports before schema_version 5");
  j["schema_version"] = 5;
  const report_document r = report_from_json(j, "x");
  REQUIRE(r.phases.has_value());
  CHECK(r.phases->list.size() == 3);
  CHECK(r.phases->timing[0].name == "timed windows");
  CHECK(to_json(r) == j);
  CHECK(phases_problem(*r.phases).empty()); // 999.5 of 1000 ms: within max(5 ms, 1%)
  report_phases p = *r.phases;
  p.list[1].ms += 20.0; // 1019.5 ms: 19.5 ms over, above the 10 ms margin
  CHECK(phases_problem(p) ==
        "the phases add up to 1019.500 ms, the wall time is 1000.000 ms (margin 10.000 ms)");
  p = *r.phases;
  p.timing.push_back({"spot checks", 600.0}); // 900 ms of parts in an 850 ms phase
  CHECK(phases_problem(p).find("the timing parts add up to 900.000 ms") == 0);
  p = *r.phases;
  p.list[0].ms = -1;
  CHECK(phases_problem(p) == "phase \"start\" has -1 ms");
  json extra = j;
  extra["phases"]["list"][0]["note"] = 1;
  CHECK(rejection(extra).find("phases.list[0].note") == 0);
}
