// The grading commands (docs/grading.md): seal, submit, submissions, grade, reward.
#include "cli/command_functions.hpp"

#include "base/fs.hpp"
#include "crypto/keyring.hpp"
#include "grade/grading.hpp"
#include "grade/heldout.hpp"
#include "grade/reward.hpp"
#include "grade/submission.hpp"
#include "prereg/error.hpp"
#include "store/ledger.hpp"

#include <fmt/format.h>

#include <set>

namespace prereg::cli::detail {
namespace fs = std::filesystem;
namespace {

grade::grade_env env_of(const common_options &o, int device) {
  grade::grade_env env;
  env.store_root = store::default_root(o.store_dir);
  env.key_path = default_key_path(o.key_file);
  env.prereg = self_exe();
  env.device_ordinal = device;
  return env;
}

/// The task's frozen protocol (a task, else exit 2).
frozen_protocol task_of(const store &s, const std::string &arg) {
  frozen_protocol fp = s.load(s.resolve(arg));
  if (!fp.proto.task)
    throw invalid_input(fmt::format("protocol {} ({}) is not a task: it has no task: section",
                                    fp.proto.id, fp.hash.substr(0, 12)));
  return fp;
}

} // namespace

int cmd_seal(args_t args) {
  CLI::App app{"seal held-out shapes: a secret with a fresh salt and seed, and the commitment a "
               "task's heldout: records",
               "seal"};
  std::string file;
  std::string out;
  app.add_option("HELDOUT", file, "YAML: axes: {AXIS: [extents...]}")->required();
  app.add_option("-o,--out", out, "the secret's file (default: HELDOUT's name + .secret.json)");
  if (!parse(app, args))
    return 0;
  const grade::heldout_secret secret =
      grade::seal_heldout(read_file(file, std::uintmax_t{1} << 20), file);
  const fs::path target =
      out.empty() ? fs::path(file).replace_extension(".secret.json") : fs::path(out);
  std::error_code ec;
  if (fs::exists(target, ec))
    throw invalid_input("refusing to replace an existing secret", target.string());
  write_file_atomic(target, canonical_json(secret.to_json()) + "\n", 0600);
  fmt::print(stderr,
             "prereg: sealed {} held-out axis list(s) into {} (mode 0600; keep it private until "
             "the leaderboard reveals it); write the commitment below into the task:\n"
             "prereg:   task: {{heldout: {{commitment: \"<it>\"}}}}\n",
             secret.axes.size(), target.string());
  fmt::print("{}\n", grade::commitment_of(secret));
  return 0;
}

int cmd_submit(args_t args) {
  CLI::App app{"pin a submission to a task: its files by SHA-256 into the store, a signed submit "
               "entry in the ledger",
               "submit"};
  common_options o;
  std::string task;
  std::vector<std::string> files;
  grade::submit_request r;
  o.add_store(app);
  o.add_key(app);
  app.add_option("TASK", task, "the task: hash, unique prefix or id")->required();
  app.add_option("FILES", files, "the submission's files, its entry file first (.py, .so or .c)")
      ->required();
  app.add_option("--name", r.name, "the submitter's name: [a-z][a-z0-9_-]{0,47}")->required();
  app.add_option("--entry", r.entry, "its function (python) or arm name (default: task.entry)");
  if (!parse(app, args))
    return 0;
  for (const auto &f : files)
    r.files.emplace_back(f);
  const store s = o.open_store();
  const frozen_protocol fp = task_of(s, task);
  const signing_key key = load_or_create_key(default_key_path(o.key_file));
  const grade::submission sub = grade::submit(s, fp, r, key);
  if (!sub.supersedes.empty())
    fmt::print(stderr, "prereg: {} supersedes {}\n", sub.id, sub.supersedes);
  fmt::print("{}\n", sub.id);
  return 0;
}

int cmd_submissions(args_t args) {
  CLI::App app{"list a task's submissions: pending, graded or superseded", "submissions"};
  common_options o;
  std::string task;
  o.add_store(app);
  app.add_option("TASK", task, "the task: hash, unique prefix or id")->required();
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const frozen_protocol fp = task_of(s, task);
  const ledger l = s.get_ledger();
  std::set<std::string> graded;
  for (const auto &e : l.entries())
    if (e.value("event", "") == ledger_event::grade && e.value("protocol_hash", "") == fp.hash)
      for (const auto &id : e.value("graded", json::array()))
        graded.insert(id.get<std::string>());
  const auto subs = grade::submissions_of(l.entries(), fp.hash);
  fmt::print("{:<24} {:<8} {:<10} {:<12} {:<27} {}\n", "submission", "kind", "status", "sha256",
             "submitted", "entry");
  for (const auto &sub : subs) {
    const bool newest = std::none_of(subs.begin(), subs.end(), [&](const grade::submission &x) {
      return x.supersedes == sub.id;
    });
    const std::string status = !newest                   ? "superseded"
                               : graded.contains(sub.id) ? "graded"
                                                         : "pending";
    fmt::print("{:<24} {:<8} {:<10} {:<12} {:<27} {}\n", escape_control(sub.id),
               grade::kind_name(sub.kind), status, sub.files.front().sha256.substr(0, 12), sub.time,
               escape_control(sub.entry));
  }
  return 0;
}

int cmd_grade(args_t args) {
  CLI::App app{"grade a task's pending submissions, each in its own confined process, into a "
               "signed leaderboard",
               "grade"};
  common_options o;
  grade::open_options open;
  std::string task, heldout, work, out_dir = "reports";
  std::vector<std::string> trust;
  int device = 0, part = -1;
  bool only_open = false, close = false;
  o.add_store(app);
  o.add_key(app);
  app.add_option("TASK", task, "the task: hash, unique prefix or id");
  app.add_option("--heldout", heldout, "the task's held-out secret (prereg seal wrote it)");
  app.add_flag("--all", open.all, "grade every current submission, graded before or not");
  app.add_option("--out", out_dir, "where leaderboards go (default ./reports)");
  app.add_option("--work", work,
                 "the grading's work folder (default OUT/<task id>/.<grade id>.work)");
  app.add_option("--device", device, "CUDA device ordinal (default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--trust", trust, "accept only these signers in the parts (as for audit)");
  app.add_flag("--open", only_open, "only open the grading; print how many submissions it grades");
  app.add_option("--part", part, "run part K of the grading in --work (0: the baseline)");
  app.add_flag("--close", close, "write the leaderboard of the grading in --work");
  if (!parse(app, args))
    return 0;
  const grade::grade_env env = env_of(o, device);
  if ((part >= 0 || close) && work.empty())
    throw invalid_input("grade: --part and --close need --work");
  if (part >= 0) {
    grade::run_part(env, work, static_cast<std::size_t>(part));
    return 0;
  }
  if (close) {
    fmt::print("{}\n", grade::close_grading(env, work, trust).string());
    return 0;
  }
  if (task.empty())
    throw invalid_input("grade: give the TASK (or --work with --part or --close)");
  open.task = task;
  if (!heldout.empty())
    open.secret = heldout;
  open.work = work;
  open.out_dir = out_dir;
  if (only_open) {
    const fs::path w = grade::open_grading(env, open);
    fmt::print("{}\n", w.empty() ? 0 : grade::read_plan(w).parts.size() - 1);
    return 0;
  }
  const fs::path dir = grade::grade_task(env, open, trust);
  if (dir.empty()) {
    fmt::print(stderr, "prereg: no pending submission: nothing to grade\n");
    return 0;
  }
  fmt::print("{}\n", dir.string());
  return 0;
}

int cmd_reward(args_t args) {
  CLI::App app{"grade one submission against a task and print its score (0 when failed or "
               "excluded)",
               "reward"};
  common_options o;
  grade::reward_options r;
  std::string task, heldout, baseline, out_dir = "reports";
  std::vector<std::string> files;
  int device = 0;
  bool as_json = false;
  o.add_store(app);
  o.add_key(app);
  app.add_option("TASK", task, "the task: hash, unique prefix or id")->required();
  app.add_option("FILES", files, "the submission's files, its entry file first")->required();
  app.add_option("--entry", r.entry, "its function (python) or arm name (default: task.entry)");
  app.add_option("--heldout", heldout, "also grade the held-out shapes (the task's secret)");
  app.add_option("--baseline", baseline, "a baseline report folder to use (default: cached)");
  app.add_option("--out", out_dir, "where rewards go: OUT/<task id>/rewards (default ./reports)");
  app.add_option("--device", device, "CUDA device ordinal (default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--json", as_json, "print the result as JSON");
  if (!parse(app, args))
    return 0;
  r.task = task;
  for (const auto &f : files)
    r.files.emplace_back(f);
  if (!heldout.empty())
    r.secret = heldout;
  r.baseline = baseline;
  r.out_dir = out_dir;
  const json result = grade::reward(env_of(o, device), r);
  if (as_json) {
    fmt::print("{}\n", result.dump(2));
    return 0;
  }
  fmt::print("score {:.6g}", result.at("score").get<double>());
  if (result.at("excluded").get<bool>()) {
    const json &x = result.at("exclusions").front();
    fmt::print(" (excluded: {}: {})\n", x.value("code", ""), escape_control(x.value("detail", "")));
  } else {
    fmt::print(" [{:.6g}, {:.6g}]\n", result.at("score_lo").get<double>(),
               result.at("score_hi").get<double>());
  }
  fmt::print("{}\n", result.at("report").is_null() ? std::string("no report")
                                                   : result.at("report").get<std::string>());
  return 0;
}

} // namespace prereg::cli::detail
