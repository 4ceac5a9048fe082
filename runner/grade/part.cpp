// A grading's parts (grading.hpp): the baseline's `prereg run`, then each submission's in a
// confined process of its own; the plan's JSON form.
#include "grade/grading.hpp"

#include "base/fs.hpp"
#include "crypto/keyring.hpp"
#include "grade/protocols.hpp"
#include "grade/retime.hpp"
#include "grade/score.hpp"
#include "prereg/error.hpp"
#include "store/ledger.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <deque>

namespace prereg::grade {
namespace fs = std::filesystem;
namespace {

/// The folder part k's run writes its report under.
fs::path runs_dir(const fs::path &work, const plan_part &p) {
  return work / "runs" / (p.sub.id.empty() ? std::string("baseline") : p.sub.id);
}

/// The folder a submission's re-timing `i` writes under: beside its first run's, not inside it,
/// so that the second process cannot see or touch the first's report (nor a later re-timing an
/// earlier one's).
fs::path retime_dir(const fs::path &work, const plan_part &p, std::size_t i) {
  return work / "runs" / (p.sub.id + ".retime" + (i == 0 ? "" : std::to_string(i + 1)));
}

/// The last line of a file, without its newline ("" for none).
std::string last_line(const fs::path &file) {
  std::string text;
  try {
    text = read_file(file, 1 << 20);
  } catch (const std::exception &) {
    return "";
  }
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

/// Why a run failed: its run-aborted entry's reason when the ledger has one for the protocol
/// after `seq`, else its error line without the `prereg: error: ` prefix.
std::string failure_of(const store &s, const std::string &hash, std::int64_t after_seq,
                       const fs::path &stderr_file, int exit_code) {
  ledger l = s.get_ledger();
  std::string reason;
  for (const auto &e : l.entries())
    if (e.value("seq", std::int64_t{0}) > after_seq && e.value("protocol_hash", "") == hash &&
        e.value("event", "") == ledger_event::run_aborted)
      reason = e.value("reason", "");
  if (!reason.empty())
    return reason;
  std::string line = last_line(stderr_file);
  if (line.starts_with("prereg: error: "))
    line = line.substr(15);
  return line.empty() ? fmt::format("prereg run ended with status {}", exit_code) : line;
}

/// The walls of submission k's run of protocol `hash`: the task's other submissions, builds and
/// runs hidden, and every other frozen protocol (earlier gradings' and rewards' hold held-out
/// shapes and seeds); its own shown; the store, the key and its run folder kept.
confine_plan run_walls(const grade_env &env, const store &s, const fs::path &work,
                       const grading_plan &plan, const plan_part &p, const fs::path &own_run,
                       const std::string &hash) {
  confine_plan w;
  const fs::path own_sub = submission_dir(s, plan.task_hash, p.sub.id);
  const fs::path own_build = s.root() / "builds" / plan.grade_id / p.sub.id;
  w.keep = {s.root(), env.key_path, own_run, fs::path(env.prereg)};
  w.masks.push_back({s.root() / "submissions" / plan.task_hash, {own_sub}});
  w.masks.push_back({s.root() / "builds", {own_build}});
  w.masks.push_back({work, {own_run}});
  w.masks.push_back({s.root() / "protocols", {s.protocol_dir(hash)}});
  if (!plan.secret_file.empty())
    w.hidden_files.push_back(plan.secret_file);
  return w;
}

/// Runs protocol `hash` (the baseline's, a submission's or its re-timing's) in its own process
/// writing under `own`: {report (relative to work, or null), failure, exit_code, wall_ms,
/// confinement}. A submission's process is confined and given the baseline's instrument.
json run_process(const grade_env &env, const store &s, const fs::path &work,
                 const grading_plan &plan, const plan_part &p, const std::string &hash,
                 const fs::path &own) {
  fs::create_directories(own);
  json result = {{"report", nullptr},
                 {"failure", ""},
                 {"exit_code", 0},
                 {"wall_ms", 0},
                 {"confinement", nullptr}};
  const bool baseline = p.sub.id.empty();
  std::vector<std::string> argv = run_argv(env, s, hash, own);
  if (!baseline) { // a submission's process: the baseline's floor and ceiling (docs/grading.md)
    const json base = parse_json_strict(read_file(work / "results" / "part-0.json"), "part-0.json");
    if (base.at("report").is_null())
      throw invalid_input("the baseline's part has no report: run part 0 first");
    // A copy in the part's own folder: the rest of the work folder is hidden from its run.
    const fs::path copy = own / "baseline" / "report.json";
    fs::create_directories(copy.parent_path());
    write_file_atomic(copy, read_file(work / base.at("report").get<std::string>() / "report.json"));
    argv.insert(argv.end(), {"--instrument-from", copy.parent_path().string()});
  }
  const std::int64_t head = s.get_ledger().head().first;
  confine_plan walls = baseline ? confine_plan{} : run_walls(env, s, work, plan, p, own, hash);
  walls.walls = !baseline;
  const confined_result r = run_confined(argv, walls, own / "stdout.log", own / "stderr.log");
  if (r.facts.half_built())
    throw io_error(fmt::format("the walls around submission {} could not be put up: {}", p.sub.id,
                               r.facts.reason));
  result["exit_code"] = r.exit_code;
  result["wall_ms"] = r.wall_ms;
  if (!baseline)
    result["confinement"] = r.facts.to_json();
  const std::string folder = last_line(own / "stdout.log");
  std::error_code ec;
  if (r.exit_code == 0 && !folder.empty() &&
      fs::is_regular_file(fs::path(folder) / "report.json", ec))
    result["report"] = fs::relative(fs::path(folder), work).string();
  else
    result["failure"] = failure_of(s, hash, head, own / "stderr.log", r.exit_code);
  return result;
}

report_document read_doc(const fs::path &dir) {
  const fs::path file = dir / "report.json";
  return report_from_json(parse_json_strict(read_file(file), file.string()), file.string());
}

/// The re-timings of a submission whose first process (`first`, its result) excludes nothing:
/// protocols for the cell of its largest speed-up, each with a fresh nonce, frozen and run in a
/// confined process of its own (docs/grading.md, "The re-timing"). The last one's result, the
/// earlier ones' under its `earlier` (when there are any); null when the first process already
/// excludes it.
json retime_part(const grade_env &env, const store &s, const fs::path &work,
                 const grading_plan &plan, const plan_part &p, const json &first) {
  const frozen_protocol task = s.load(plan.task_hash);
  const frozen_protocol fp = s.load(p.protocol_hash);
  const json base = parse_json_strict(read_file(work / "results" / "part-0.json"), "part-0.json");
  const report_document baseline = read_doc(work / base.at("report").get<std::string>());
  const report_document doc = read_doc(work / first.at("report").get<std::string>());
  const signing_key key = load_or_create_key(env.key_path);
  s.add_key(key.public_part());
  std::deque<report_document> docs;
  std::deque<retime_run> runs;
  std::vector<json> attempts;
  const auto attempt = [&](std::size_t i, const cell_key &cell) {
    const std::string nonce = random_hex(16);
    const std::string hash = freeze_grading(s, retime_body(fp.body, cell, nonce), key);
    json r = run_process(env, s, work, plan, p, hash, retime_dir(work, p, i));
    r["nonce"] = nonce;
    r["cell"] = to_json(cell);
    r["protocol_hash"] = hash;
    retime_run &rt = runs.emplace_back();
    rt.cell = cell;
    rt.failure = r.value("failure", "");
    rt.wall_ms = r.at("wall_ms").get<double>();
    if (!r.at("report").is_null())
      try {
        rt.report = &docs.emplace_back(read_doc(work / r.at("report").get<std::string>()));
      } catch (const std::exception &) { // the closing step judges it (audit_problem)
        rt.report = nullptr;
      }
    attempts.push_back(std::move(r));
    return &rt;
  };
  graded_run run{&fp.proto, fp.hash, &doc, "", first.at("wall_ms").get<double>()};
  (void)retime_until(task.proto, baseline, run, attempt);
  return nest_retimes(std::move(attempts));
}

} // namespace

json grading_plan::to_json() const {
  json parts_j = json::array();
  for (const auto &p : parts) {
    json j = {{"protocol_hash", p.protocol_hash}, {"build", p.build}};
    if (!p.sub.id.empty()) {
      j["submission"] = p.sub.to_json();
      j["submission"]["time"] = p.sub.time;
      j["submission"]["seq"] = p.sub.seq;
    }
    parts_j.push_back(std::move(j));
  }
  return {{"prereg_grading", 1},
          {"grade_id", grade_id},
          {"task", task_hash},
          {"nonce", nonce},
          {"opened_at", opened_at},
          {"reveal", reveal},
          {"secret_file", secret_file.string()},
          {"out", out_dir.string()},
          {"parts", parts_j}};
}

grading_plan grading_plan::from_json(const json &j, const std::string &where) {
  try {
    grading_plan p;
    if (j.at("prereg_grading").get<int>() != 1)
      throw invalid_input("not a grading plan of version 1", where);
    p.grade_id = j.at("grade_id").get<std::string>();
    p.task_hash = j.at("task").get<std::string>();
    p.nonce = j.at("nonce").get<std::string>();
    p.opened_at = j.at("opened_at").get<std::string>();
    p.reveal = j.at("reveal");
    p.secret_file = j.at("secret_file").get<std::string>();
    p.out_dir = j.at("out").get<std::string>();
    for (const auto &pj : j.at("parts")) {
      plan_part part;
      part.protocol_hash = pj.at("protocol_hash").get<std::string>();
      part.build = pj.at("build");
      if (pj.contains("submission")) {
        json e = pj.at("submission");
        e["event"] = "submit";
        e["protocol_hash"] = p.task_hash;
        part.sub = submissions_of(std::vector<json>{e}, p.task_hash).at(0);
      }
      p.parts.push_back(std::move(part));
    }
    return p;
  } catch (const error &) {
    throw;
  } catch (const std::exception &e) {
    throw invalid_input(fmt::format("the grading's plan cannot be read: {}", e.what()), where);
  }
}

grading_plan read_plan(const fs::path &work) {
  const fs::path file = work / "plan.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw invalid_input("no grading's plan.json in this folder (prereg grade --open makes one)",
                        work.string());
  return grading_plan::from_json(parse_json_strict(read_file(file), file.string()), file.string());
}

void run_part(const grade_env &env, const fs::path &work, std::size_t k) {
  const grading_plan plan = read_plan(work);
  if (k >= plan.parts.size())
    throw invalid_input(fmt::format("part {} does not exist: the plan has parts 0 (the baseline) "
                                    "to {}",
                                    k, plan.parts.size() - 1));
  const plan_part &p = plan.parts[k];
  const store s(env.store_root);
  const fs::path results = work / "results";
  fs::create_directories(results);
  json result;
  if (p.protocol_hash.empty()) { // a C source that did not build: nothing to run
    result = {{"part", k},        {"report", nullptr}, {"failure", "the C source did not build"},
              {"exit_code", 2},   {"wall_ms", 0},      {"confinement", nullptr},
              {"retime", nullptr}};
    write_file_atomic(results / fmt::format("part-{}.json", k), canonical_json(result));
    return;
  }
  result = run_process(env, s, work, plan, p, p.protocol_hash, runs_dir(work, p));
  result["part"] = k;
  if (k == 0 && result["report"].is_null())
    throw io_error(
        fmt::format("the baseline's run failed: {}", result["failure"].get<std::string>()));
  result["retime"] = k > 0 && !result["report"].is_null()
                         ? retime_part(env, s, work, plan, p, result)
                         : json(nullptr);
  write_file_atomic(results / fmt::format("part-{}.json", k), canonical_json(result));
}

std::vector<std::string> run_argv(const grade_env &env, const store &s, const std::string &hash,
                                  const fs::path &own) {
  return {env.prereg,
          "run",
          hash,
          "--store",
          fs::absolute(s.root()).string(),
          "--key",
          fs::absolute(env.key_path).string(),
          "--out",
          own.string(),
          "--device",
          std::to_string(env.device_ordinal),
          "--quiet"};
}

} // namespace prereg::grade
