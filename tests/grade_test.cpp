// Tests of grading's pure parts (docs/grading.md): the task and grading sections, the held-out
// secret and its commitment, a grading's protocols, scores with their intervals, exclusions,
// ranks, the leaderboard's build and pages, and the Slurm script. The whole workflow on the CPU
// is tests/e2e/grading.sh.
#include "base/fs.hpp"
#include "grade/board.hpp"
#include "grade/board_page.hpp"
#include "grade/grade_slurm.hpp"
#include "grade/heldout.hpp"
#include "grade/protocols.hpp"
#include "grade/retime.hpp"
#include "grade/score.hpp"
#include "site/boards.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>

using namespace prereg;
using namespace prereg::grade;
namespace fs = std::filesystem;

namespace {

const char *task_yaml = R"(prereg: 2
id: tgrade
title: "a task"
hypothesis: "h"
device: cpu
operation: rmsnorm
dtype: fp32
axes: {rows: [64, 128], cols: [256]}
passes: [fwd]
arms:
  - {id: eager, kernel: rmsnorm.unfused}
measurement: {repetitions: 8, warmup: 1}
analysis: {bootstrap_resamples: 400}
task:
  baseline: eager
  entry: rmsnorm
  input_sets: 3
  floor: {margin: 2}
)";

protocol task_protocol(const std::string &extra = "") {
  return parse_protocol(std::string(task_yaml) + extra, "task.yaml");
}

submission alice() {
  submission s;
  s.id = "alice.1";
  s.name = "alice";
  s.kind = submission_kind::python;
  s.entry = "rmsnorm";
  s.files = {{"sub.py", std::string(64, 'a'), 10}};
  return s;
}

/// A report of `arm` at every cell of `p` with samples around `ms` (per row count), passing.
report_document report_of(const protocol &p, const std::string &arm, double ms_per_row,
                          double ceiling_gbps = 10) {
  report_document d;
  d.protocol.hash = protocol_hash(p);
  d.protocol.body = to_json(p);
  d.instrument.ceiling_gbps = ceiling_gbps;
  d.instrument.ceiling_samples_gbps = {ceiling_gbps};
  d.instrument.ceiling_bytes = 1 << 20;
  d.instrument.launch_floor_ms = 0.001;
  for (cell_key k : all_cells(p)) {
    k.arm = arm;
    report_cell c;
    c.key = k;
    for (int i = 0; i < 8; ++i)
      c.samples_ms.push_back(ms_per_row * static_cast<double>(k.rows) * (1.0 + 0.01 * i));
    c.statistic_ms = statistic(c.samples_ms, statistic_kind::median);
    c.bytes_per_step = static_cast<std::uint64_t>(k.rows * k.cols * 8);
    d.cells.push_back(c);
    correctness_record r;
    r.key = k;
    r.passed = true;
    d.correctness.push_back(r);
  }
  return d;
}

struct graded {
  protocol task = task_protocol();
  json axes = grading_axes(task, nullptr);
  submission sub = alice();
  json body = grading_body(to_json(task), protocol_hash(task), axes,
                           {"GRADE-x", std::string(32, '1'), ""}, "submission", &sub);
  protocol grading = protocol_from_json(body, "grading");
  json base_body = grading_body(to_json(task), protocol_hash(task), axes,
                                {"GRADE-x", std::string(32, '1'), ""}, "baseline", nullptr);
  protocol base_protocol = protocol_from_json(base_body, "baseline");
  report_document baseline = report_of(base_protocol, "eager", 0.01);
  std::string hash = protocol_hash(body);
};

} // namespace

TEST_CASE("a task's section parses, normalises and round-trips") {
  const protocol t = task_protocol();
  REQUIRE(t.task);
  CHECK(t.task->baseline == "eager");
  CHECK(t.task->input_sets == 3);
  CHECK(t.task->floor_margin == 2);
  CHECK(t.predictions.empty());
  const json j = to_json(t);
  CHECK_FALSE(j.contains("predictions"));
  CHECK(j.at("task") == json{{"baseline", "eager"},
                             {"score", "geomean_speedup"},
                             {"entry", "rmsnorm"},
                             {"input_sets", 3},
                             {"floor", {{"margin", 2.0}}}});
  CHECK(to_json(protocol_from_json(j, "task")) == j);
  CHECK(t.input_sets() == 4); // the engine's count is a grading's, not the task's
}

TEST_CASE("a task's section is refused where it is wrong") {
  const auto refused = [](const std::string &from, const std::string &to, const char *why) {
    std::string y = task_yaml;
    const auto at = y.find(from);
    REQUIRE(at != std::string::npos);
    y.replace(at, from.size(), to);
    CHECK_THROWS_WITH(parse_protocol(y, "task.yaml"), doctest::Contains(why));
  };
  refused("baseline: eager", "baseline: fused", "task.baseline 'fused' is not an arm");
  refused("input_sets: 3", "input_sets: 10", "every cell takes only 8");
  refused("input_sets: 3", "input_sets: 1", "task.input_sets");
  refused("margin: 2", "margin: 0.5", "task.floor.margin must be from 1 to 1000");
  refused("entry: rmsnorm", "score: speedup_at", "task.score speedup_at needs task.at");
  { // prereg: 1 names its shapes as shapes: (its axes: would be refused first)
    std::string y = task_yaml;
    y.replace(y.find("prereg: 2"), 9, "prereg: 1");
    y.replace(y.find("axes: {"), 7, "shapes: {");
    CHECK_THROWS_WITH(parse_protocol(y, "task.yaml"), doctest::Contains("task needs prereg: 2"));
  }
  CHECK_THROWS_WITH(task_protocol("  at: {rows: 64, cols: 256}\n"),
                    doctest::Contains("task.at belongs to task.score: speedup_at"));
  CHECK_THROWS_WITH(task_protocol("  heldout: {commitment: \"abc\"}\n"),
                    doctest::Contains("64 lowercase hex digits"));
  const protocol at = task_protocol("  score: speedup_at\n  at: {rows: 128, cols: 256}\n");
  CHECK(at.task->at == std::vector<std::int64_t>{128, 256});
  CHECK_THROWS_WITH(task_protocol("  score: speedup_at\n  at: {rows: 32, cols: 256}\n"),
                    doctest::Contains("not a public extent"));
}

TEST_CASE("a held-out secret seals, commits and extends the axes") {
  const heldout_secret s = seal_heldout("axes:\n  rows: [512, 7]\n", "h.yaml");
  CHECK(s.salt.size() == 64);
  CHECK(s.seed.size() == 16);
  CHECK(seal_heldout("axes: {rows: [512, 7]}\n", "h.yaml").salt != s.salt); // fresh salt
  const std::string c = commitment_of(s);
  CHECK(c == sha256_hex(canonical_json(s.to_json())));
  const heldout_secret back = secret_from_json(s.to_json(), "s.json");
  CHECK(commitment_of(back) == c);
  heldout_secret other = back;
  other.axes[0].second = {512, 8};
  CHECK(commitment_of(other) != c);
  const protocol t = task_protocol();
  CHECK(grading_axes(t, &s) == json{{"rows", {64, 128, 512, 7}}, {"cols", {256}}});
  CHECK_THROWS_WITH(seal_heldout("axes: {rows: [5, 5]}\n", "h.yaml"),
                    doctest::Contains("lists 5 twice"));
  heldout_secret dup = s;
  dup.axes[0].second = {64};
  CHECK_THROWS_WITH(grading_axes(t, &dup), doctest::Contains("already one of the task's"));
  heldout_secret wrong = s;
  wrong.axes[0].first = "depth";
  CHECK_THROWS_WITH(grading_axes(t, &wrong), doctest::Contains("does not have"));
  json extra = s.to_json();
  extra["note"] = "x";
  CHECK_THROWS_WITH(secret_from_json(extra, "s.json"), doctest::Contains("note"));
}

TEST_CASE("a grading's protocols are the task's with its axes, arms and grading") {
  graded g;
  CHECK(g.grading.id == "tgrade-grade");
  REQUIRE(g.grading.arms.size() == 1);
  CHECK(g.grading.arms[0].id == "alice");
  CHECK(g.grading.arms[0].file == "submissions/" + protocol_hash(g.task) + "/alice.1/sub.py");
  CHECK(g.grading.grading->role == "submission");
  CHECK(g.grading.input_sets() == 3);
  CHECK(g.base_protocol.arms[0].id == "eager");
  CHECK_FALSE(g.body.contains("task"));
  const json other = grading_body(to_json(g.task), protocol_hash(g.task), g.axes,
                                  {"GRADE-x", std::string(32, '2'), ""}, "submission", &g.sub);
  CHECK(protocol_hash(other) != g.hash); // a fresh nonce: fresh inputs
}

/// A re-timing of `sub` at `cell` whose samples are around `ms_per_row` per row.
struct retimed {
  protocol p;
  report_document doc;
  retime_run run;
  retimed(const graded &g, const cell_key &cell, double ms_per_row)
      : p(protocol_from_json(retime_body(g.body, cell, std::string(32, '3')), "retime")),
        doc(report_of(p, cell.arm, ms_per_row)) {
    run.cell = cell;
    run.report = &doc;
  }
};

TEST_CASE("a re-timing's protocol: one cell, a fixed number of samples, a new nonce") {
  graded g;
  cell_key k = all_cells(g.grading).at(1);
  const json b = retime_body(g.body, k, std::string(32, '3'));
  CHECK(b["axes"] == json::parse(R"({"rows": [128], "cols": [256]})"));
  CHECK(b["passes"] == json::array({"fwd"}));
  CHECK(b["measurement"]["repetitions"] == retime_samples);
  CHECK(b["grading"]["role"] == "retime");
  CHECK(b["grading"]["nonce"] == std::string(32, '3'));
  CHECK(b["grading"]["submission"] == "alice.1");
  CHECK(b["arms"] == g.body["arms"]); // the same submission, the same file
  CHECK(protocol_hash(b) != g.hash);
  CHECK(protocol_hash(retime_body(g.body, k, std::string(32, '4'))) != protocol_hash(b));
}

TEST_CASE("a submission's score, interval and exclusions") {
  graded g;
  report_document sub = report_of(g.grading, "alice", 0.005); // twice as fast
  graded_run first{&g.grading, g.hash, &sub, "", NAN};
  first.first_only = true;
  const cell_key cell = retime_cell(*g.task.task, score_entry(g.task, g.baseline, first));
  CHECK(cell == all_cells(g.grading).at(0)); // a tie of speed-ups: the first in plan order
  retimed rt(g, cell, 0.005);
  graded_run run{&g.grading, g.hash, &sub, "", NAN};
  run.retimes = {&rt.run};
  entry_score e = score_entry(g.task, g.baseline, run);
  REQUIRE_FALSE(e.excluded());
  CHECK(e.score == doctest::Approx(2.0));
  CHECK(e.lo <= e.score);
  CHECK(e.hi >= e.score);
  REQUIRE(e.cells.size() == 2);
  CHECK(e.cells[0].floor_ms == doctest::Approx(64 * 256 * 8 / (2 * 10e9) * 1e3));
  REQUIRE(e.retimes.size() == 1);
  CHECK(e.retimes[0].confirmed);
  CHECK(e.retimes[0].second.n == static_cast<std::size_t>(8));
  CHECK_FALSE(retime_again(e));
  const entry_score again = score_entry(g.task, g.baseline, run);
  CHECK(again.lo == e.lo); // seeded: the audit recomputes the same interval
  CHECK(again.hi == e.hi);

  SUBCASE("a failed correctness record") {
    sub.correctness[1].passed = false;
    sub.correctness[1].detail = "timed sample 3: y: unwritten";
    e = score_entry(g.task, g.baseline, run);
    REQUIRE(e.excluded());
    CHECK(e.exclusions[0].code == "correctness");
    CHECK(e.score == 0);
  }
  SUBCASE("faster than the physical floor") {
    for (auto &c : sub.cells)
      for (auto &v : c.samples_ms)
        v = 1e-6;
    sub.cells[0].statistic_ms = sub.cells[1].statistic_ms = 1e-6;
    e = score_entry(g.task, g.baseline, run);
    REQUIRE(e.excluded());
    CHECK(e.exclusions[0].code == "below-floor");
  }
  SUBCASE("an instrument that is not the baseline's") {
    sub.instrument.ceiling_gbps = 1000;
    e = score_entry(g.task, g.baseline, run);
    CHECK(e.exclusions.at(0).code == "instrument-not-given");
  }
  SUBCASE("samples longer than the whole process") {
    run.wall_ms = 1e-3;
    e = score_entry(g.task, g.baseline, run);
    CHECK(e.exclusions.at(0).code == "beyond-wall-time");
  }
  SUBCASE("a missing cell, an input mutated, no report") {
    sub.cells.pop_back();
    report_defect d;
    d.code = "input-mutated";
    d.cell = sub.cells[0].key;
    sub.defects.push_back(d);
    e = score_entry(g.task, g.baseline, run);
    REQUIRE(e.exclusions.size() == 2);
    CHECK(e.exclusions[0].code == "input-mutated");
    CHECK(e.exclusions[1].code == "not-measured");
    e = score_entry(g.task, g.baseline, {&g.grading, g.hash, nullptr, "it crashed", NAN});
    CHECK(e.exclusions.at(0).code == "run-failed");
    CHECK(e.exclusions.at(0).detail == "it crashed");
  }
  SUBCASE("a second process 100x slower does not confirm the first's timing") {
    retimed slow(g, cell, 0.5);
    run.retimes = {&slow.run};
    e = score_entry(g.task, g.baseline, run);
    REQUIRE(e.exclusions.size() == 1);
    CHECK(e.exclusions[0].code == "not-confirmed");
    CHECK(e.exclusions[0].detail.find("more than 4 x the first's upper quartile") !=
          std::string::npos);
    CHECK(e.score == 0);
    REQUIRE(e.retimes.size() == 1);
    CHECK_FALSE(e.retimes[0].confirmed);
    CHECK(e.retimes[0].slower_only);
    CHECK(retime_again(e)); // slower alone: the grading re-times again
  }
  SUBCASE("a re-timing that is missing, measured another cell or failed does not confirm") {
    run.retimes.clear();
    e = score_entry(g.task, g.baseline, run);
    CHECK(e.exclusions.at(0).code == "not-confirmed");
    CHECK(e.exclusions.at(0).detail.find("not re-timed") != std::string::npos);
    retimed other(g, all_cells(g.grading).at(1), 0.005);
    run.retimes = {&other.run};
    e = score_entry(g.task, g.baseline, run);
    CHECK(e.exclusions.at(0).detail.find("instead of") != std::string::npos);
    rt.doc.correctness[0].passed = false;
    rt.doc.correctness[0].detail = "y: wrong";
    run.retimes = {&rt.run};
    e = score_entry(g.task, g.baseline, run);
    CHECK(e.exclusions.at(0).code == "not-confirmed");
    CHECK(e.exclusions.at(0).detail == "the re-timing: correctness: y: wrong");
    CHECK_FALSE(retime_again(e)); // only a slower re-timing is repeated
    rt.run.report = nullptr;
    rt.run.failure = "it crashed";
    e = score_entry(g.task, g.baseline, run);
    CHECK(e.exclusions.at(0).detail == "the re-timing left no report: it crashed");
  }
  SUBCASE("a first process that excludes itself is not judged by a re-timing") {
    sub.correctness[0].passed = false;
    e = score_entry(g.task, g.baseline, run);
    CHECK(e.exclusions.at(0).code == "correctness");
    CHECK(e.retimes.empty());
  }
  SUBCASE("a baseline without the cell cannot score") {
    g.baseline.cells.pop_back();
    CHECK_THROWS_WITH((void)score_entry(g.task, g.baseline, run),
                      doctest::Contains("the grading cannot score it"));
  }
}

TEST_CASE("a slower re-timing is repeated, up to three; the last decides") {
  graded g;
  report_document sub = report_of(g.grading, "alice", 0.005);
  const cell_key cell = all_cells(g.grading).at(0);
  retimed slow1(g, cell, 0.5), slow2(g, cell, 0.5), slow3(g, cell, 0.5), ok(g, cell, 0.005);
  graded_run run{&g.grading, g.hash, &sub, "", NAN};
  run.retimes = {&slow1.run, &ok.run};
  entry_score e = score_entry(g.task, g.baseline, run);
  CHECK_FALSE(e.excluded()); // a stretch of a busy machine, then a confirming process
  REQUIRE(e.retimes.size() == 2);
  CHECK_FALSE(e.retimes[0].confirmed);
  CHECK(e.retimes[1].confirmed);
  run.retimes = {&slow1.run, &slow2.run};
  e = score_entry(g.task, g.baseline, run);
  CHECK(retime_again(e));
  CHECK(e.exclusions.at(0).detail.starts_with("re-timing 2 of 2: the second process's lower"));
  run.retimes = {&slow1.run, &slow2.run, &slow3.run};
  e = score_entry(g.task, g.baseline, run);
  CHECK_FALSE(retime_again(e)); // three are all a grading makes
  REQUIRE(e.exclusions.size() == 1);
  CHECK(e.exclusions[0].code == "not-confirmed");
  run.retimes = {&slow1.run, &slow2.run, &slow3.run, &ok.run};
  e = score_entry(g.task, g.baseline, run);
  CHECK(e.exclusions.at(0).detail == "4 re-timings ran, more than the 3 a grading makes");
  run.retimes = {&ok.run, &ok.run}; // another after one that confirmed
  e = score_entry(g.task, g.baseline, run);
  CHECK(e.exclusions.at(0).detail ==
        "re-timing 1 of 2 was followed by another though it confirmed");
  slow1.doc.correctness[0].passed = false;
  run.retimes = {&slow1.run, &ok.run}; // another after one that failed otherwise
  e = score_entry(g.task, g.baseline, run);
  CHECK(e.exclusions.at(0).detail.starts_with("re-timing 1 of 2 was followed by another though "
                                              "it failed: the re-timing: correctness"));
}

TEST_CASE("re-timings nest as the last one with the earlier ones under it, and flatten back") {
  CHECK(nest_retimes({}).is_null());
  CHECK(flat_retimes(nullptr).empty());
  const json one = nest_retimes({json{{"nonce", "a"}}});
  CHECK(one == json{{"nonce", "a"}}); // one re-timing: no `earlier`, the form of before
  const json three = nest_retimes({{{"nonce", "a"}}, {{"nonce", "b"}}, {{"nonce", "c"}}});
  CHECK(three["nonce"] == "c");
  CHECK(three["earlier"] == json::parse(R"([{"nonce": "a"}, {"nonce": "b"}])"));
  const std::vector<json> back = flat_retimes(three);
  REQUIRE(back.size() == 3);
  CHECK(back[0]["nonce"] == "a");
  CHECK(back[2] == json{{"nonce", "c"}});
  CHECK(flat_retimes(one) == std::vector<json>{one});
}

TEST_CASE("the re-timings' loop stops at the first that does not fail the factor alone") {
  graded g;
  report_document sub = report_of(g.grading, "alice", 0.005);
  const cell_key cell = all_cells(g.grading).at(0);
  retimed slow(g, cell, 0.5), ok(g, cell, 0.005);
  const graded_run first{&g.grading, g.hash, &sub, "", NAN};
  std::vector<const retime_run *> script;
  std::vector<cell_key> asked;
  const auto attempt = [&](std::size_t i, const cell_key &c) {
    asked.push_back(c);
    return script.at(i);
  };
  const std::chrono::milliseconds no_pause{0};
  script = {&ok.run, &ok.run, &ok.run};
  CHECK(retime_until(g.task, g.baseline, first, attempt, no_pause) == 1);
  CHECK(asked.at(0) == cell);
  script = {&slow.run, &ok.run, &ok.run};
  CHECK(retime_until(g.task, g.baseline, first, attempt, no_pause) == 2);
  script = {&slow.run, &slow.run, &slow.run};
  CHECK(retime_until(g.task, g.baseline, first, attempt, no_pause) == 3);
  sub.correctness[0].passed = false; // a first process that excludes itself: none
  CHECK(retime_until(g.task, g.baseline, first, attempt, no_pause) == 0);
}

TEST_CASE("ranks do not separate overlapping intervals, and never rank the excluded") {
  entry_score a, b, c, x;
  a.score = 3, a.lo = 2.8, a.hi = 3.2;
  b.score = 2.9, b.lo = 2.7, b.hi = 3.0; // overlaps a
  c.score = 1, c.lo = 0.9, c.hi = 1.1;
  x.exclusions.push_back({"correctness", std::nullopt, "wrong"});
  const auto r = ranks_of({&a, &b, &c, &x});
  CHECK(r == std::vector<std::int64_t>{1, 1, 3, 0});
}

TEST_CASE("the leaderboard is built in rank order and rendered") {
  graded g;
  board_inputs in;
  in.task_hash = protocol_hash(g.task);
  in.task_body = to_json(g.task);
  in.task_freeze = json::object();
  in.task = g.task;
  board_part base;
  base.path = "parts/tgrade-grade/R0";
  base.run_id = "R0";
  base.doc = g.baseline;
  in.gradings.push_back({"GRADE-x", std::string(32, '1'), base});
  const auto entry = [&](const std::string &name, double ms, bool correct) {
    board_entry e;
    e.sub = alice();
    e.sub.name = name;
    e.sub.id = name + ".1";
    e.grade_id = "GRADE-x";
    e.grading = protocol_from_json(grading_body(to_json(g.task), in.task_hash, g.axes,
                                                {"GRADE-x", std::string(32, '1'), ""}, "submission",
                                                &e.sub),
                                   "grading");
    e.protocol_hash = protocol_hash(to_json(e.grading));
    board_part p;
    p.path = "parts/tgrade-grade/" + name;
    p.run_id = name;
    p.doc = report_of(e.grading, name, ms);
    p.doc.correctness[0].passed = correct;
    e.run = p;
    e.wall_ms = 1e9;
    const auto retime = [&](char nonce, double at_ms) { // a process at the first cell
      board_retime r;
      r.nonce = std::string(32, nonce);
      r.cell = all_cells(e.grading).at(0);
      const json rb = retime_body(to_json(e.grading), r.cell, r.nonce);
      r.protocol_hash = protocol_hash(rb);
      board_part rp;
      rp.path = "parts/tgrade-grade/" + name + ".retime" + nonce;
      rp.run_id = name + ".retime" + nonce;
      rp.doc = report_of(protocol_from_json(rb, "retime"), name, at_ms);
      r.run = rp;
      r.wall_ms = 1e9;
      e.retimes.push_back(r);
    };
    if (correct && name == "slow") // a stretch of the machine, then as fast: re-timed twice
      retime('2', ms * 100);
    if (correct) // equal speed-ups: the first cell, as fast
      retime('3', ms);
    return e;
  };
  in.entries = {entry("slow", 0.02, true), entry("cheat", 0.0001, false),
                entry("fast", 0.005, true)};
  const json b = build_leaderboard(in, {{"grade_id", "GRADE-x"}, {"graded_at", "T"}},
                                   {{"name", "prereg"}, {"renderer", 1}});
  REQUIRE(b.at("entries").size() == 3);
  CHECK(b["entries"][0]["name"] == "fast");
  CHECK(b["entries"][0]["rank"] == 1);
  CHECK(b["entries"][1]["name"] == "slow");
  CHECK(b["entries"][1]["rank"] == 2);
  CHECK(b["entries"][2]["name"] == "cheat");
  CHECK(b["entries"][2]["rank"].is_null());
  CHECK(b["entries"][2]["score"] == 0);
  CHECK(b["entries"][0]["retime"]["confirmed"] == true);
  CHECK_FALSE(b["entries"][0]["retime"].contains("earlier")); // one re-timing: no `earlier`
  CHECK(b["entries"][1]["retime"]["confirmed"] == true);
  REQUIRE(b["entries"][1]["retime"]["earlier"].size() == 1);
  CHECK(b["entries"][1]["retime"]["earlier"][0]["confirmed"] == false);
  CHECK(b["entries"][1]["retime"]["earlier"][0]["nonce"] == std::string(32, '2'));
  CHECK(b["entries"][2]["retime"].is_null());
  CHECK(build_leaderboard(in, b["grade"], b["tool"]) == b); // a pure function of its inputs
  const std::string html = render_board_html(b);
  CHECK(html.find("Content-Security-Policy") != std::string::npos);
  CHECK(html.find("data-name=\"cheat\" data-excluded=\"true\"") != std::string::npos);
  CHECK(render_board_markdown(b).find("| 1 | fast |") != std::string::npos);
  CHECK(html.find("<td class=\"retime\" data-confirmed=\"yes\"") != std::string::npos);
  CHECK(html.find("the last of 2 re-timings") != std::string::npos);
  if (const char *dir = std::getenv("PREREG_BOARD_SAMPLES")) { // tests/browser/check_board.sh
    fs::create_directories(dir);
    write_file_atomic(fs::path(dir) / "leaderboard.html", html);
    site::board_facts f;
    f.rel = "tgrade/GRADE-x";
    f.task_hash = in.task_hash;
    f.task_id = "tgrade";
    f.grade_id = "GRADE-x";
    f.status = "audited";
    f.entries = 3;
    f.ranked = 2;
    f.board = b;
    write_file_atomic(fs::path(dir) / "b-sample.html", site::render_board_page({&f}));
  }
}

TEST_CASE("the grading's Slurm script: a baseline, an array after it, the close after that") {
  grade_slurm_options o;
  o.prereg = "/opt/prereg";
  o.task_hash = std::string(64, 'a');
  o.task_id = "t";
  o.heldout = "/s/secret.json";
  o.store = "/s/store", o.key = "/s/key", o.out = "/s/out", o.work = "/s/work";
  const std::string s = grade_slurm_script(o);
  CHECK(s.find("--open --work \"$WORK\"") != std::string::npos);
  CHECK(s.find("--heldout '/s/secret.json'") != std::string::npos);
  CHECK(s.find("--array=1-$N") != std::string::npos);
  CHECK(s.find("--dependency=afterok:$base") != std::string::npos);
  CHECK(s.find("--dependency=afterok:$array") != std::string::npos);
  CHECK(s.find("--part \"$SLURM_ARRAY_TASK_ID\"") != std::string::npos);
  CHECK(s.find("gpus-per-task") == std::string::npos);
  o.gpus_per_task = 1;
  CHECK(grade_slurm_script(o).find("--gpus-per-task=1") != std::string::npos);
  o.partition = "a b";
  CHECK_THROWS_WITH((void)grade_slurm_script(o), doctest::Contains("is not a partition name"));
}
