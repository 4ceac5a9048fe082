// A grading's last step (grading.hpp): the parts' results read and audited, the earlier
// leaderboard's other names carried over, the leaderboard built, signed, written and ledgered.
#include "grade/grading.hpp"

#include "audit/audit.hpp"
#include "base/fs.hpp"
#include "base/time.hpp"
#include "crypto/keyring.hpp"
#include "grade/board.hpp"
#include "grade/board_read.hpp"
#include "grade/retime.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"
#include "store/ledger.hpp"
#include "store/trust.hpp"

#include <fmt/format.h>

#include <set>

namespace prereg::grade {
namespace fs = std::filesystem;
namespace {

json current_tool() {
  return {{"name", "prereg"},
          {"version", build_info::version},
          {"git_commit", build_info::git_commit},
          {"build_flags", build_info::build_flags},
          {"renderer", leaderboard_renderer_version}};
}

/// Part k's result, which must exist.
json result_of(const fs::path &work, std::size_t k) {
  const fs::path file = work / "results" / fmt::format("part-{}.json", k);
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw invalid_input(fmt::format("part {} has not run: `prereg grade --work {} --part {}`", k,
                                    work.string(), k));
  return parse_json_strict(read_file(file), file.string());
}

/// A part's report folder, audited: it must pass, else the reason.
std::optional<std::string> audit_problem(const fs::path &dir, const store &s, const trust_root &t) {
  const audit_result a = audit_report(dir, s, t);
  if (a.passed())
    return std::nullopt;
  std::string failed;
  for (const auto &n : a.failed())
    failed += (failed.empty() ? "" : ", ") + n;
  return fmt::format("its report does not audit clean: {} failed", failed);
}

std::string part_path(const report_document &d) {
  return fmt::format("parts/{}/{}", d.protocol.body.value("id", ""), d.run.run_id);
}

/// This grading's entries and its grading (baseline) from the work folder's results; the report
/// folders to copy go into `copies` (leaderboard path -> folder).
board_grading this_grading(const grading_plan &plan, const fs::path &work, const store &s,
                           const trust_root &t, std::map<std::string, fs::path> &copies) {
  const json base = result_of(work, 0);
  const fs::path dir = work / base.at("report").get<std::string>();
  if (const auto problem = audit_problem(dir, s, t))
    throw integrity_error(fmt::format("the baseline's report: {}", *problem), dir.string());
  board_grading g{plan.grade_id, plan.nonce, {}};
  g.baseline = read_board_part(dir, "");
  g.baseline.path = part_path(g.baseline.doc);
  copies[g.baseline.path] = dir;
  return g;
}

board_entry entry_of(const grading_plan &plan, std::size_t k, const fs::path &work, const store &s,
                     const trust_root &t, const frozen_protocol &task,
                     std::map<std::string, fs::path> &copies) {
  const plan_part &p = plan.parts[k];
  const json r = result_of(work, k);
  board_entry e;
  e.sub = p.sub;
  e.grade_id = plan.grade_id;
  e.protocol_hash = p.protocol_hash;
  e.grading = protocol_from_json(
      rebuilt_grading_body(task, plan.reveal, plan.grade_id, plan.nonce, &e.sub), "grading");
  e.failure = r.at("failure").get<std::string>();
  e.exit_code = r.at("exit_code").get<int>();
  e.wall_ms = r.at("wall_ms").get<double>();
  e.confinement = r.at("confinement");
  e.build = p.build;
  const auto audited = [&](const json &report, std::string &failure) {
    std::optional<board_part> out;
    if (report.is_null())
      return out;
    const fs::path dir = work / report.get<std::string>();
    if (const auto problem = audit_problem(dir, s, t)) {
      failure = *problem;
    } else {
      out = read_board_part(dir, "");
      out->path = part_path(out->doc);
      copies[out->path] = dir;
    }
    return out;
  };
  e.run = audited(r.at("report"), e.failure);
  for (const json &a : flat_retimes(r.at("retime"))) {
    board_retime &b = e.retimes.emplace_back(board_retime::from_json(a));
    b.run = audited(a.at("report"), b.failure);
  }
  return e;
}

/// The task's newest leaderboard (its last `grade` entry's folder under `out`), if any.
std::optional<fs::path> previous_board(const store &s, const frozen_protocol &task,
                                       const fs::path &out) {
  std::string last;
  for (const auto &e : s.get_ledger().entries())
    if (e.value("event", "") == ledger_event::grade && e.value("protocol_hash", "") == task.hash)
      last = e.value("grade_id", "");
  if (last.empty())
    return std::nullopt;
  const fs::path dir = out / task.proto.id / last;
  std::error_code ec;
  if (!fs::is_regular_file(dir / "leaderboard.json", ec))
    throw invalid_input(fmt::format("the task's last leaderboard {} is not under {}: grade with "
                                    "the --out that holds it, so that its entries carry over",
                                    last, out.string()));
  return dir;
}

/// The earlier leaderboard's entries of names this grading did not grade, with their gradings.
void carry_over(const fs::path &prev_dir, const frozen_protocol &task, board_inputs &in,
                std::map<std::string, fs::path> &copies) {
  const json prev = parse_json_strict(read_file(prev_dir / "leaderboard.json"), "leaderboard.json");
  board_inputs old = inputs_from_board(prev, prev_dir, task);
  std::set<std::string> names;
  for (const auto &e : in.entries)
    names.insert(e.sub.name);
  std::set<std::string> needed;
  for (auto &e : old.entries) {
    if (names.contains(e.sub.name))
      continue;
    needed.insert(e.grade_id);
    if (e.run)
      copies[e.run->path] = prev_dir / e.run->path;
    for (const auto &rt : e.retimes)
      if (rt.run)
        copies[rt.run->path] = prev_dir / rt.run->path;
    in.entries.push_back(std::move(e));
  }
  for (auto &g : old.gradings)
    if (needed.contains(g.grade_id)) {
      copies[g.baseline.path] = prev_dir / g.baseline.path;
      in.gradings.push_back(std::move(g));
    }
}

/// Copies the regular files of `from` into `to`.
void copy_part(const fs::path &from, const fs::path &to) {
  fs::create_directories(to);
  for (const auto &e : fs::directory_iterator(from))
    if (e.is_regular_file())
      write_file_atomic(to / e.path().filename(), read_file(e.path()));
}

/// Writes the leaderboard's folder under a temporary name, renames it into place and appends
/// the `grade` entry (a failed append removes the folder).
fs::path publish(const store &s, const fs::path &folder, const grading_plan &plan,
                 const json &board, const std::map<std::string, fs::path> &copies,
                 const signing_key &key) {
  const std::string payload = canonical_json(board);
  const fs::path final_dir = folder / plan.grade_id;
  const fs::path temp = folder / ("." + plan.grade_id + ".partial");
  fs::create_directories(folder);
  if (!create_directory_exclusive(temp))
    throw io_error("cannot reserve the leaderboard's folder", temp.string());
  try {
    for (const auto &[path, from] : copies)
      copy_part(from, temp / path);
    write_file_atomic(temp / "leaderboard.json", payload);
    const std::string sig = key.sign(dsse_pae(leaderboard_payload_type, payload));
    write_file_atomic(
        temp / "leaderboard.dsse.json",
        canonical_json({{"payloadType", leaderboard_payload_type},
                        {"payload", base64_encode(payload)},
                        {"signatures", json::array({{{"keyid", key.fingerprint()},
                                                     {"sig", base64_encode(sig)}}})}}));
    write_file_atomic(temp / "leaderboard.md", render_board_markdown(board));
    write_file_atomic(temp / "leaderboard.html", render_board_html(board));
    json graded = json::array(), entries = json::array();
    for (std::size_t k = 1; k < plan.parts.size(); ++k)
      graded.push_back(plan.parts[k].sub.id);
    for (const auto &e : board.at("entries"))
      entries.push_back(e.at("submission").at("submission_id"));
    s.add_key(key.public_part());
    file_lock lock(s.lock_path());
    s.get_ledger().verify_for_append(&key);
    rename_no_replace(temp, final_dir);
    try {
      s.get_ledger().append({{"event", ledger_event::grade},
                             {"protocol_hash", plan.task_hash},
                             {"grade_id", plan.grade_id},
                             {"graded", graded},
                             {"entries", entries},
                             {"report_sha256", sha256_hex(payload)}},
                            key);
    } catch (...) {
      std::error_code ec;
      fs::remove_all(final_dir, ec);
      throw;
    }
  } catch (...) {
    std::error_code ec;
    fs::remove_all(temp, ec);
    throw;
  }
  return final_dir;
}

} // namespace

fs::path close_grading(const grade_env &env, const fs::path &work,
                       const std::vector<std::string> &trust) {
  const grading_plan plan = read_plan(work);
  const store s(env.store_root);
  const frozen_protocol task = s.load(plan.task_hash);
  const trust_root t = resolve_trust(trust, s);
  std::map<std::string, fs::path> copies;
  board_inputs in;
  in.task_hash = task.hash;
  in.task_body = task.body;
  in.task_freeze = task.freeze;
  in.task = task.proto;
  in.reveal = plan.reveal;
  in.gradings.push_back(this_grading(plan, work, s, t, copies));
  for (std::size_t k = 1; k < plan.parts.size(); ++k)
    in.entries.push_back(entry_of(plan, k, work, s, t, task, copies));
  if (const auto prev = previous_board(s, task, plan.out_dir))
    carry_over(*prev, task, in, copies);
  const json meta = {{"grade_id", plan.grade_id}, {"graded_at", utc_now_rfc3339()}};
  const json board = build_leaderboard(in, meta, current_tool());
  const signing_key key = load_or_create_key(env.key_path);
  return publish(s, plan.out_dir / task.proto.id, plan, board, copies, key);
}

fs::path grade_task(const grade_env &env, const open_options &o,
                    const std::vector<std::string> &trust) {
  const fs::path work = open_grading(env, o);
  if (work.empty())
    return {};
  const grading_plan plan = read_plan(work);
  for (std::size_t k = 0; k < plan.parts.size(); ++k)
    run_part(env, work, k);
  const fs::path dir = close_grading(env, work, trust);
  std::error_code ec;
  fs::remove_all(work, ec);
  return dir;
}

} // namespace prereg::grade
