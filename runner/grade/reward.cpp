// The reward (reward.hpp): pin, freeze, run confined, score; the baseline cached per task,
// device and axes.
#include "grade/reward.hpp"

#include "base/fs.hpp"
#include "base/time.hpp"
#include "crypto/keyring.hpp"
#include "grade/compile.hpp"
#include "grade/heldout.hpp"
#include "grade/protocols.hpp"
#include "grade/retime.hpp"
#include "grade/score.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <deque>
#include <functional>

namespace prereg::grade {
namespace fs = std::filesystem;
namespace {

std::optional<heldout_secret> reward_secret(const frozen_protocol &task,
                                            const std::optional<fs::path> &file) {
  if (!file)
    return std::nullopt; // public shapes only
  const auto &commitment = task.proto.task->commitment;
  if (!commitment)
    throw invalid_input("this task commits to no held-out secret: leave --heldout out");
  heldout_secret secret = read_secret(*file);
  if (commitment_of(secret) != *commitment)
    throw integrity_error("the held-out secret does not hash to the task's commitment",
                          file->string());
  return secret;
}

/// The files pinned as a submission of id reward-<16 hex> (their names and hashes decide it),
/// copied into the store's submissions folder unless there already.
submission pin_files(const store &s, const frozen_protocol &task, const reward_options &o) {
  if (o.files.empty())
    throw invalid_input("reward: give the submission's files, its entry file first");
  submission sub;
  sub.name = "candidate";
  const std::string ext = o.files.front().extension().string();
  sub.kind = ext == ".py"   ? submission_kind::python
             : ext == ".so" ? submission_kind::plugin
             : ext == ".c"  ? submission_kind::c_source
                            : throw invalid_input("the entry file must be .py, .so or .c",
                                                  o.files.front().string());
  sub.entry = o.entry.empty() ? task.proto.task->entry : o.entry;
  json names = json::array();
  std::vector<std::string> bytes;
  for (const auto &f : o.files) {
    bytes.push_back(read_file(f, std::uintmax_t{64} << 20));
    sub.files.push_back({f.filename().string(), sha256_hex(bytes.back()), bytes.back().size()});
    names.push_back({{"name", sub.files.back().name}, {"sha256", sub.files.back().sha256}});
  }
  sub.id = "reward-" + sha256_hex(canonical_json(names)).substr(0, 16);
  const fs::path dir = submission_dir(s, task.hash, sub.id);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    const fs::path temp = dir.parent_path() / ("." + sub.id + ".partial." + random_hex(3));
    fs::create_directories(temp);
    for (std::size_t i = 0; i < o.files.size(); ++i)
      write_file_atomic(temp / sub.files[i].name, bytes[i], 0444);
    try {
      rename_no_replace(temp, dir);
    } catch (const std::exception &) {
      fs::remove_all(temp, ec); // another call pinned the same files first
    }
  }
  return sub;
}

/// Runs `argv` (a `prereg run`) and returns its report folder, or the failure.
std::pair<fs::path, std::string> run_and_read(const std::vector<std::string> &argv,
                                              const confine_plan &walls, const fs::path &own,
                                              confined_result &r) {
  fs::create_directories(own);
  r = run_confined(argv, walls, own / "stdout.log", own / "stderr.log");
  if (r.facts.half_built())
    throw io_error(
        fmt::format("the walls around the submission could not be put up: {}", r.facts.reason));
  std::string text = read_file(own / "stdout.log");
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  const std::string folder =
      text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  std::error_code ec;
  if (r.exit_code == 0 && fs::is_regular_file(fs::path(folder) / "report.json", ec))
    return {folder, ""};
  std::string err = read_file(own / "stderr.log");
  while (!err.empty() && err.back() == '\n')
    err.pop_back();
  err = err.substr(err.rfind('\n') == std::string::npos ? 0 : err.rfind('\n') + 1);
  if (err.starts_with("prereg: error: "))
    err = err.substr(15);
  return {{}, err.empty() ? fmt::format("prereg run ended with status {}", r.exit_code) : err};
}

/// The baseline report: given, else the one cached for these axes and this device, else a new
/// baseline run (cached for the next call).
fs::path baseline_for(const grade_env &env, const store &s, const frozen_protocol &task,
                      const json &axes, const std::string &seed, const reward_options &o,
                      const fs::path &rewards, const signing_key &key) {
  if (!o.baseline.empty())
    return o.baseline;
  const fs::path cache =
      rewards / fmt::format("baseline-{}-device{}.json",
                            sha256_hex(canonical_json(axes)).substr(0, 12), env.device_ordinal);
  std::error_code ec;
  if (fs::is_regular_file(cache, ec)) {
    const fs::path dir = parse_json_strict(read_file(cache), cache.string()).value("report", "");
    if (fs::is_regular_file(dir / "report.json", ec))
      return dir;
  }
  const std::string id = fmt::format("REWARD-BASELINE-{}-{}-{}", utc_stamp(std::time(nullptr)),
                                     task.hash.substr(0, 12), random_hex(3));
  const json body =
      grading_body(task.body, task.hash, axes, {id, random_hex(16), seed}, "baseline", nullptr);
  const std::string hash = freeze_grading(s, body, key);
  confined_result r;
  confine_plan none;
  none.walls = false;
  const auto [dir, failure] =
      run_and_read(run_argv(env, s, hash, rewards / id), none, rewards / id, r);
  if (dir.empty())
    throw io_error(fmt::format("the baseline's run failed: {}", failure));
  write_file_atomic(cache, canonical_json({{"report", fs::absolute(dir).string()}}));
  return dir;
}

/// The walls of a reward call's process writing under `own` and running protocol `hash` (none:
/// the build): the store, the key and `own` kept; the task's other submissions, other builds,
/// other calls and every other frozen protocol (held-out shapes and seeds lie in earlier
/// calls') hidden; the secret too.
confine_plan reward_walls(const grade_env &env, const store &s, const frozen_protocol &task,
                          const submission &sub, const fs::path &build, const fs::path &rewards,
                          const fs::path &own, const std::string &hash, const reward_options &o) {
  confine_plan walls;
  walls.keep = {s.root(), env.key_path, own, fs::path(env.prereg)};
  walls.masks.push_back(
      {s.root() / "submissions" / task.hash, {submission_dir(s, task.hash, sub.id)}});
  walls.masks.push_back({s.root() / "builds", {build}});
  walls.masks.push_back({rewards, {own}});
  std::vector<fs::path> shown;
  if (!hash.empty())
    shown.push_back(s.protocol_dir(hash));
  walls.masks.push_back({s.root() / "protocols", shown});
  if (o.secret)
    walls.hidden_files.push_back(fs::absolute(*o.secret));
  return walls;
}

/// One confined process of a reward call: `hash` run under `own` with the baseline's
/// instrument; its report folder (empty if none) and failure.
std::pair<fs::path, std::string> run_reward_process(const grade_env &env, const store &s,
                                                    const std::string &hash, const fs::path &own,
                                                    const confine_plan &walls,
                                                    const fs::path &base_dir, confined_result &r) {
  std::vector<std::string> argv = run_argv(env, s, hash, own);
  // A copy in the process's own folder: the rest is hidden from its run.
  fs::create_directories(own / "baseline");
  write_file_atomic(own / "baseline" / "report.json", read_file(base_dir / "report.json"));
  argv.insert(argv.end(), {"--instrument-from", (own / "baseline").string()});
  return run_and_read(argv, walls, own, r);
}

std::optional<report_document> read_report(const fs::path &dir) {
  if (dir.empty())
    return std::nullopt;
  return report_from_json(parse_json_strict(read_file(dir / "report.json"), dir.string()),
                          dir.string());
}

/// What a reward call's processes left: the first, and the re-timings when any ran.
struct reward_runs {
  std::string hash, failure;
  fs::path report_dir;
  std::optional<report_document> doc;
  confined_result r;
  std::vector<json> retimes; ///< each {cell, nonce, protocol_hash, report, failure, wall_ms}
  std::deque<report_document> retime_docs;
  std::deque<retime_run> rts;
};

/// The re-timings of a reward call whose first process excludes nothing (docs/grading.md, "The
/// re-timing"): confined processes at the cell of its largest speed-up, each a fresh nonce, the
/// i-th in `own` + suffix (beside the first call's folder, not inside it).
void reward_retime(const grade_env &env, const store &s, const frozen_protocol &task,
                   const report_document &base, const protocol &grading, const json &body,
                   const signing_key &key,
                   const std::function<confine_plan(const fs::path &, const std::string &)> &walls,
                   const fs::path &own, const fs::path &base_dir, reward_runs &x) {
  const auto attempt = [&](std::size_t i, const cell_key &cell) {
    const std::string nonce = random_hex(16);
    const std::string hash = freeze_grading(s, retime_body(body, cell, nonce), key);
    const fs::path dir_i = own.string() + (i == 0 ? "" : std::to_string(i + 1));
    confined_result r;
    const auto [dir, failure] =
        run_reward_process(env, s, hash, dir_i, walls(dir_i, hash), base_dir, r);
    retime_run &rt = x.rts.emplace_back();
    rt.cell = cell;
    if (auto doc = read_report(dir))
      rt.report = &x.retime_docs.emplace_back(std::move(*doc));
    rt.failure = failure;
    rt.wall_ms = r.wall_ms;
    x.retimes.push_back({{"cell", to_json(cell)},
                         {"nonce", nonce},
                         {"protocol_hash", hash},
                         {"report", dir.empty() ? json(nullptr) : json(dir.string())},
                         {"failure", failure},
                         {"wall_ms", r.wall_ms}});
    return &rt;
  };
  (void)retime_until(task.proto, base, {&grading, x.hash, &*x.doc, "", x.r.wall_ms}, attempt);
}

} // namespace

json reward(const grade_env &env, const reward_options &o) {
  const auto start = std::chrono::steady_clock::now();
  const store s(env.store_root);
  const frozen_protocol task = load_task(s, o.task);
  const std::optional<heldout_secret> secret = reward_secret(task, o.secret);
  const submission sub = pin_files(s, task, o);
  const json axes = grading_axes(task.proto, secret ? &*secret : nullptr);
  const std::string seed = secret ? secret->seed : "";
  const fs::path rewards = fs::absolute(o.out_dir / task.proto.id / "rewards").lexically_normal();
  fs::create_directories(rewards);
  const std::string call = fmt::format("REWARD-{}-{}-{}", utc_stamp(std::time(nullptr)),
                                       task.hash.substr(0, 12), random_hex(3));
  const fs::path own = rewards / call;
  fs::create_directories(own);
  const fs::path build = s.root() / "builds" / call / sub.id;
  const auto walls = [&](const fs::path &dir, const std::string &hash) {
    return reward_walls(env, s, task, sub, build, rewards, dir, hash, o);
  };
  json built = nullptr;
  if (sub.kind == submission_kind::c_source) {
    std::vector<std::string> names;
    for (const auto &f : sub.files)
      names.push_back(f.name);
    fs::create_directories(build);
    confine_plan bw = walls(own, "");
    bw.hidden_files.push_back(env.key_path);
    const build_result b =
        build_c_submission(submission_dir(s, task.hash, sub.id), names, build, bw,
                           {env.key_path, s.root()}, build_limit_s(task.proto));
    built = {{"ok", b.ok}, {"log", b.log}, {"sandbox", b.sandbox}};
  }
  const signing_key key = load_or_create_key(env.key_path);
  s.add_key(key.public_part());
  const fs::path base_dir = baseline_for(env, s, task, axes, seed, o, rewards, key);
  const report_document base = *read_report(base_dir);
  const json body =
      grading_body(task.body, task.hash, axes, {call, random_hex(16), seed}, "reward", &sub);
  const protocol grading = protocol_from_json(body, "reward protocol");
  reward_runs x;
  if (!built.is_null() && !built.value("ok", false)) {
    x.failure = "the C source did not build: " + built.value("log", "");
  } else {
    x.hash = freeze_grading(s, body, key);
    std::tie(x.report_dir, x.failure) =
        run_reward_process(env, s, x.hash, own, walls(own, x.hash), base_dir, x.r);
    x.doc = read_report(x.report_dir);
    if (x.doc) // beside the first call's folder, not inside it
      reward_retime(env, s, task, base, grading, body, key, walls, rewards / (call + ".retime"),
                    base_dir, x);
  }
  graded_run run{&grading, x.hash, x.doc ? &*x.doc : nullptr, x.failure, x.r.wall_ms};
  for (const auto &rt : x.rts)
    run.retimes.push_back(&rt);
  const entry_score e = score_entry(task.proto, base, run);
  const json retime = judged_retimes(x.retimes, e);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {{"score", e.score},
          {"score_lo", finite_or_null(e.lo)},
          {"score_hi", finite_or_null(e.hi)},
          {"excluded", e.excluded()},
          {"exclusions", exclusions_json(e)},
          {"cells", cells_json(e)},
          {"report", x.report_dir.empty() ? json(nullptr) : json(x.report_dir.string())},
          {"retime", retime},
          {"baseline", base_dir.string()},
          {"protocol_hash", x.hash},
          {"submission", sub.to_json()},
          {"confinement", x.r.facts.to_json()},
          {"seconds", seconds}};
}

} // namespace prereg::grade
