// leaderboard.json read back into its inputs (board_read.hpp).
#include "grade/board_read.hpp"

#include "grade/protocols.hpp"
#include "grade/retime.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

namespace prereg::grade {
namespace fs = std::filesystem;
namespace {

/// The report folder a part's path names, which must stay inside the leaderboard's folder.
fs::path part_dir(const fs::path &dir, const std::string &path) {
  const fs::path rel = fs::path(path).lexically_normal();
  if (rel.empty() || rel.is_absolute() || *rel.begin() != "parts" ||
      rel.string().find("..") != std::string::npos)
    throw invalid_input(
        fmt::format("part path '{}' is not a folder under parts/", message_excerpt(path)));
  return dir / rel;
}

board_part part_from_json(const json &j, const fs::path &dir) {
  const std::string path = j.at("path").get<std::string>();
  board_part p = read_board_part(part_dir(dir, path), path);
  if (p.run_id != j.at("run_id").get<std::string>())
    throw invalid_input(fmt::format("part {} holds run {}, not {}", path, p.run_id,
                                    j.at("run_id").get<std::string>()));
  return p;
}

const json &nonce_of(const json &board, const std::string &grade_id) {
  for (const auto &g : board.at("gradings"))
    if (g.at("grade_id") == grade_id)
      return g.at("nonce");
  throw invalid_input(fmt::format("an entry names grading {}, which gradings[] lacks", grade_id));
}

board_entry entry_from_json(const json &e, const json &board, const fs::path &dir,
                            const frozen_protocol &task, const json &reveal) {
  board_entry out;
  out.sub = submission_from_json(e.at("submission"), task.hash);
  if (e.at("name").get<std::string>() != out.sub.name)
    throw invalid_input(fmt::format("entry {} quotes the submission of {}",
                                    e.at("name").get<std::string>(), out.sub.name));
  out.grade_id = e.at("grade_id").get<std::string>();
  out.protocol_hash = e.at("protocol_hash").get<std::string>();
  const std::string nonce = nonce_of(board, out.grade_id).get<std::string>();
  out.grading = protocol_from_json(
      rebuilt_grading_body(task, reveal, out.grade_id, nonce, &out.sub), "grading protocol");
  if (!e.at("run").is_null())
    out.run = part_from_json(e.at("run"), dir);
  out.failure = e.at("failure").get<std::string>();
  out.exit_code = e.at("exit_code").get<int>();
  out.wall_ms = e.at("wall_ms").get<double>();
  out.confinement = e.at("confinement");
  out.build = e.at("build");
  for (const json &a : flat_retimes(e.at("retime"))) {
    board_retime &b = out.retimes.emplace_back(board_retime::from_json(a));
    if (!a.at("run").is_null())
      b.run = part_from_json(a.at("run"), dir);
  }
  return out;
}

} // namespace

submission submission_from_json(const json &j, const std::string &task_hash) {
  json e = j;
  e["event"] = "submit";
  e["protocol_hash"] = task_hash;
  submission s = submissions_of(std::vector<json>{e}, task_hash).at(0);
  if (s.id.empty() || s.name.empty() || s.files.empty())
    throw invalid_input("a submission without an id, a name or files");
  return s;
}

json rebuilt_grading_body(const frozen_protocol &task, const json &reveal,
                          const std::string &grade_id, const std::string &nonce,
                          const submission *sub) {
  std::optional<heldout_secret> secret;
  if (!reveal.is_null())
    secret = secret_from_json(reveal, "the leaderboard's reveal");
  const json axes = grading_axes(task.proto, secret ? &*secret : nullptr);
  const grading_facts g{grade_id, nonce, secret ? secret->seed : ""};
  return grading_body(task.body, task.hash, axes, g, sub ? "submission" : "baseline", sub);
}

board_inputs inputs_from_board(const json &board, const fs::path &dir,
                               const frozen_protocol &task) {
  try {
    board_inputs in;
    in.task_hash = task.hash;
    in.task_body = task.body;
    in.task_freeze = task.freeze;
    in.task = task.proto;
    in.reveal = board.contains("heldout") ? board.at("heldout").at("reveal") : json(nullptr);
    for (const auto &g : board.at("gradings"))
      in.gradings.push_back({g.at("grade_id").get<std::string>(), g.at("nonce").get<std::string>(),
                             part_from_json(g.at("baseline"), dir)});
    for (const auto &e : board.at("entries"))
      in.entries.push_back(entry_from_json(e, board, dir, task, in.reveal));
    return in;
  } catch (const error &) {
    throw;
  } catch (const std::exception &e) {
    throw invalid_input(fmt::format("leaderboard.json cannot be read: {}", e.what()),
                        (dir / "leaderboard.json").string());
  }
}

} // namespace prereg::grade
