// A grading's first step (grading.hpp): the task and its secret verified, the pending
// submissions chosen, C sources built, the grading's protocols frozen, the work folder written.
#include "grade/grading.hpp"

#include "base/fs.hpp"
#include "base/time.hpp"
#include "crypto/keyring.hpp"
#include "grade/compile.hpp"
#include "grade/heldout.hpp"
#include "grade/protocols.hpp"
#include "prereg/error.hpp"
#include "store/ledger.hpp"

#include <fmt/format.h>

#include <ctime>
#include <set>

namespace prereg::grade {
namespace fs = std::filesystem;
namespace {

/// The held-out secret the task commits to: required exactly when it has a commitment.
std::optional<heldout_secret> checked_secret(const frozen_protocol &task,
                                             const std::optional<fs::path> &file) {
  const auto &commitment = task.proto.task->commitment;
  if (!commitment) {
    if (file)
      throw invalid_input("this task commits to no held-out secret: leave --heldout out",
                          file->string());
    return std::nullopt;
  }
  if (!file)
    throw invalid_input(fmt::format("task {} holds shapes out: give its secret with --heldout FILE "
                                    "(what `prereg seal` wrote)",
                                    task.proto.id));
  heldout_secret secret = read_secret(*file);
  const std::string got = commitment_of(secret);
  if (got != *commitment)
    throw integrity_error(fmt::format("the held-out secret hashes to {}, but the task commits to "
                                      "{}: not the secret this task was sealed with",
                                      got.substr(0, 12), commitment->substr(0, 12)),
                          file->string());
  return secret;
}

/// The current submission of each name (its newest), in first-submission order of the names,
/// that no grading graded yet (every current one with `all`).
std::vector<submission> pending_of(std::span<const json> entries, const std::string &task_hash,
                                   bool all) {
  std::set<std::string> graded;
  for (const auto &e : entries)
    if (e.value("event", "") == ledger_event::grade && e.value("protocol_hash", "") == task_hash &&
        e.contains("graded") && e["graded"].is_array())
      for (const auto &id : e["graded"])
        if (id.is_string())
          graded.insert(id.get<std::string>());
  std::vector<submission> current;
  for (auto &s : submissions_of(entries, task_hash)) {
    auto it = std::find_if(current.begin(), current.end(),
                           [&](const submission &c) { return c.name == s.name; });
    if (it == current.end())
      current.push_back(std::move(s));
    else
      *it = std::move(s);
  }
  std::erase_if(current, [&](const submission &c) { return !all && graded.contains(c.id); });
  return current;
}

/// The walls of a C build: the key and the secret hidden, the task's other submissions and
/// builds hidden, its own source shown.
confine_plan build_walls(const store &s, const grade_env &env, const frozen_protocol &task,
                         const submission &sub, const fs::path &secret) {
  confine_plan p;
  p.keep = {submission_dir(s, task.hash, sub.id)};
  p.masks.push_back({s.root() / "submissions" / task.hash, {submission_dir(s, task.hash, sub.id)}});
  p.masks.push_back({s.root() / "protocols", {}}); // held-out shapes and seeds lie there
  p.hidden_files = {env.key_path};
  if (!secret.empty())
    p.hidden_files.push_back(secret);
  return p;
}

/// Builds each C source part into STORE/builds/<grade id>/<id>/; records how it went.
void build_sources(const store &s, const grade_env &env, const frozen_protocol &task,
                   grading_plan &plan) {
  for (auto &part : plan.parts) {
    if (part.sub.id.empty() || part.sub.kind != submission_kind::c_source)
      continue;
    const fs::path out = s.root() / "builds" / plan.grade_id / part.sub.id;
    std::vector<std::string> files;
    for (const auto &f : part.sub.files)
      files.push_back(f.name);
    confine_plan walls = build_walls(s, env, task, part.sub, plan.secret_file);
    walls.masks.push_back({s.root() / "builds", {out}});
    fs::create_directories(out);
    const build_result b =
        build_c_submission(submission_dir(s, task.hash, part.sub.id), files, out, walls,
                           {env.key_path, s.root()}, build_limit_s(task.proto));
    part.build = {{"ok", b.ok},
                  {"log", b.log},
                  {"command", b.command},
                  {"confinement", b.facts.to_json()},
                  {"sandbox", b.sandbox}};
  }
}

/// Freezes the baseline's protocol and each submission's (not one whose build failed).
void freeze_parts(const store &s, const grade_env &env, const frozen_protocol &task,
                  const std::optional<heldout_secret> &secret, grading_plan &plan) {
  const signing_key key = load_or_create_key(env.key_path);
  s.add_key(key.public_part());
  const json axes = grading_axes(task.proto, secret ? &*secret : nullptr);
  const grading_facts g{plan.grade_id, plan.nonce, secret ? secret->seed : ""};
  for (auto &part : plan.parts) {
    if (!part.build.is_null() && !part.build.value("ok", false))
      continue;
    const bool base = part.sub.id.empty();
    const json body = grading_body(task.body, task.hash, axes, g, base ? "baseline" : "submission",
                                   base ? nullptr : &part.sub);
    part.protocol_hash = freeze_grading(s, body, key);
  }
}

} // namespace

fs::path open_grading(const grade_env &env, const open_options &o) {
  const store s(env.store_root);
  const frozen_protocol task = load_task(s, o.task);
  const std::optional<heldout_secret> secret = checked_secret(task, o.secret);
  std::vector<submission> pending;
  {
    ledger l = s.get_ledger();
    l.verify_for_append();
    pending = pending_of(l.entries(), task.hash, o.all);
  }
  if (pending.empty())
    return {};
  grading_plan plan;
  plan.grade_id = fmt::format("GRADE-{}-{}-{}", utc_stamp(std::time(nullptr)),
                              task.hash.substr(0, 12), random_hex(3));
  plan.task_hash = task.hash;
  plan.nonce = random_hex(16);
  plan.opened_at = utc_now_rfc3339();
  plan.reveal = secret ? secret->to_json() : json(nullptr);
  if (o.secret)
    plan.secret_file = fs::absolute(*o.secret).lexically_normal();
  plan.out_dir = fs::absolute(o.out_dir).lexically_normal();
  plan.parts.push_back({});
  for (auto &sub : pending)
    plan.parts.push_back({std::move(sub), "", nullptr});
  const fs::path work =
      fs::absolute(o.work.empty() ? plan.out_dir / task.proto.id / ("." + plan.grade_id + ".work")
                                  : o.work)
          .lexically_normal();
  fs::create_directories(work.parent_path());
  if (!create_directory_exclusive(work))
    throw invalid_input("the work folder exists already: give another --work", work.string());
  build_sources(s, env, task, plan);
  freeze_parts(s, env, task, secret, plan);
  write_file_atomic(work / "plan.json", canonical_json(plan.to_json()), 0600);
  return work;
}

} // namespace prereg::grade
