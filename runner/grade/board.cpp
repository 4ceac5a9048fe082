// leaderboard.json from its inputs (board.hpp): entries scored, ranked and ordered.
#include "grade/board.hpp"

#include "base/fs.hpp"
#include "crypto/crypto.hpp"
#include "grade/retime.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace prereg::grade {
namespace fs = std::filesystem;
namespace {

const board_grading &grading_of(const board_inputs &in, const std::string &grade_id) {
  for (const auto &g : in.gradings)
    if (g.grade_id == grade_id)
      return g;
  throw invalid_input(
      fmt::format("entry of grading {} whose baseline the leaderboard lacks", grade_id));
}

json submission_json(const submission &s) {
  json j = s.to_json();
  j["time"] = s.time;
  j["seq"] = s.seq;
  return j;
}

/// The entry's re-timings: the last one (what ran, and what the score judged of it), the
/// earlier ones under its `earlier` (when there are any); null when none ran.
json retime_json(const board_entry &e, const entry_score &sc) {
  std::vector<json> all;
  for (const auto &rt : e.retimes)
    all.push_back(rt.to_json());
  return judged_retimes(std::move(all), sc);
}

json entry_json(const board_entry &e, const entry_score &sc, std::int64_t rank) {
  return {{"name", e.sub.name},
          {"submission", submission_json(e.sub)},
          {"grade_id", e.grade_id},
          {"protocol_hash", e.protocol_hash},
          {"run", e.run ? e.run->to_json() : json(nullptr)},
          {"failure", e.failure},
          {"exit_code", e.exit_code},
          {"wall_ms", e.wall_ms},
          {"confinement", e.confinement},
          {"build", e.build},
          {"retime", retime_json(e, sc)},
          {"cells", cells_json(sc)},
          {"exclusions", exclusions_json(sc)},
          {"excluded", sc.excluded()},
          {"score", sc.score},
          {"score_lo", finite_or_null(sc.lo)},
          {"score_hi", finite_or_null(sc.hi)},
          {"rank", rank > 0 ? json(rank) : json(nullptr)}};
}

} // namespace

json board_retime::to_json() const {
  return {{"nonce", nonce},
          {"protocol_hash", protocol_hash},
          {"cell", prereg::to_json(cell)},
          {"run", run ? run->to_json() : json(nullptr)},
          {"failure", failure},
          {"exit_code", exit_code},
          {"wall_ms", wall_ms},
          {"confinement", confinement}};
}

board_retime board_retime::from_json(const json &j) {
  board_retime r;
  r.nonce = j.at("nonce").get<std::string>();
  r.protocol_hash = j.at("protocol_hash").get<std::string>();
  r.cell = cell_key_from_json(j.at("cell"), "retime.cell", "the re-timing");
  r.failure = j.at("failure").get<std::string>();
  r.exit_code = j.at("exit_code").get<int>();
  r.wall_ms = j.at("wall_ms").get<double>();
  r.confinement = j.at("confinement");
  return r;
}

json board_part::to_json() const {
  return {{"path", path},
          {"run_id", run_id},
          {"report_sha256", report_sha256},
          {"protocol_hash", doc.protocol.hash}};
}

board_part read_board_part(const fs::path &dir, const std::string &path) {
  board_part p;
  p.path = path;
  const std::string bytes = read_file(dir / "report.json");
  p.report_sha256 = sha256_hex(bytes);
  p.doc = report_from_json(parse_json_strict(bytes, (dir / "report.json").string()),
                           (dir / "report.json").string());
  p.run_id = p.doc.run.run_id;
  return p;
}

json build_leaderboard(const board_inputs &in, const json &meta, const json &tool) {
  std::vector<entry_score> scores;
  for (const auto &e : in.entries) {
    const board_grading &g = grading_of(in, e.grade_id);
    graded_run run;
    run.grading = &e.grading;
    run.grading_hash = e.protocol_hash;
    run.report = e.run ? &e.run->doc : nullptr;
    run.failure = e.failure;
    run.wall_ms = e.wall_ms;
    std::vector<retime_run> rts(e.retimes.size());
    for (std::size_t i = 0; i < rts.size(); ++i) {
      const board_retime &b = e.retimes[i];
      rts[i] = {b.cell, b.run ? &b.run->doc : nullptr, b.failure, b.wall_ms};
      run.retimes.push_back(&rts[i]);
    }
    scores.push_back(score_entry(in.task, g.baseline.doc, run));
  }
  std::vector<const entry_score *> ptrs;
  for (const auto &s : scores)
    ptrs.push_back(&s);
  const std::vector<std::int64_t> ranks = ranks_of(ptrs);
  std::vector<std::size_t> order(in.entries.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const bool ra = ranks[a] > 0, rb = ranks[b] > 0;
    if (ra != rb)
      return ra;
    if (ranks[a] != ranks[b])
      return ranks[a] < ranks[b];
    if (scores[a].score != scores[b].score)
      return scores[a].score > scores[b].score;
    return in.entries[a].sub.name < in.entries[b].sub.name;
  });
  json entries = json::array();
  for (std::size_t i : order)
    entries.push_back(entry_json(in.entries[i], scores[i], ranks[i]));
  json gradings = json::array();
  for (const auto &g : in.gradings)
    gradings.push_back(
        {{"grade_id", g.grade_id}, {"nonce", g.nonce}, {"baseline", g.baseline.to_json()}});
  json out = {
      {"leaderboard_version", 1},
      {"tool", tool},
      {"task", {{"hash", in.task_hash}, {"body", in.task_body}, {"freeze", in.task_freeze}}},
      {"grade", meta},
      {"gradings", gradings},
      {"entries", entries}};
  if (in.task.task && in.task.task->commitment)
    out["heldout"] = {{"commitment", *in.task.task->commitment}, {"reveal", in.reveal}};
  return out;
}

} // namespace prereg::grade
