// The commands that run protocols: run (one device, or one shard per device, merged), try,
// merge, slurm.
#include "cli/command_functions.hpp"

#include "base/fs.hpp"
#include "base/process.hpp"
#include "crypto/keyring.hpp"
#include "grade/grade_slurm.hpp"
#include "model/report_model.hpp"
#include "prereg/error.hpp"
#include "report/summary_text.hpp"
#include "run/merge.hpp"
#include "run/run.hpp"
#include "run/slurm.hpp"
#include "spec/arm_code.hpp"
#include "spec/shard.hpp"
#include "store/store.hpp"
#include "store/trust.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace prereg::cli::detail {

namespace {

/// The arguments of the child `prereg run` of shard `k` of `n` on `device`.
std::vector<std::string> shard_argv(const std::string &exe, const run_options &r,
                                    const std::string &hash, shard_spec shard, int device) {
  return {exe,
          "run",
          hash,
          "--shard",
          to_string(shard),
          "--device",
          std::to_string(device),
          "--store",
          r.store_root.string(),
          "--key",
          r.key_path.string(),
          "--out",
          r.out_dir.string(),
          "--quiet"};
}

/// A child `prereg run`, its stdout read by this process.
spawned_child spawn_shard(const std::vector<std::string> &argv) {
  try {
    return spawn_reading_stdout(argv);
  } catch (const process_error &e) {
    throw io_error(e.call() == "pipe" ? "cannot create a pipe for a shard process"
                                      : "cannot fork a shard process");
  }
}

/// Starts shard k/N on device devices[k-1] for every k, at once, saying each pid on stderr.
std::vector<spawned_child> start_shards(const run_options &r, const frozen_protocol &fp,
                                        const std::vector<int> &devices) {
  const auto n = static_cast<std::int64_t>(devices.size());
  const std::string exe = self_exe();
  std::vector<spawned_child> children;
  for (std::int64_t k = 1; k <= n; ++k) {
    const int device = devices[static_cast<std::size_t>(k - 1)];
    children.push_back(spawn_shard(shard_argv(exe, r, fp.hash, shard_spec{k, n}, device)));
    fmt::print(stderr, "prereg: shard {}/{} on device {}: pid {}\n", k, n, device,
               children.back().pid);
  }
  return children;
}

/// The last line of what a `prereg run` printed: its report folder.
std::filesystem::path last_line(std::string text) {
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

/// What the shards' children left: their report folders, in shard order, and the exit code
/// of the first that failed (0: none did).
struct shard_results {
  std::vector<std::filesystem::path> parts;
  int worst = 0;
};

/// Reads each child's output and waits for it, in shard order; a failed shard is said on
/// stderr.
shard_results collect_shards(std::vector<spawned_child> &children, const frozen_protocol &fp) {
  const std::size_t n = children.size();
  shard_results out;
  for (std::size_t i = 0; i < n; ++i) {
    auto &c = children[i];
    const std::string text = read_all(c.stdout_read.get());
    c.stdout_read.reset();
    const wait_status status = wait_for(c.pid);
    const int code = status.exited() ? status.exit_code() : 1;
    if (code != 0) {
      fmt::print(stderr,
                 "prereg: shard {}/{} failed (exit {}); rerun it with `prereg run {} "
                 "--shard {}/{}`, then `prereg merge` the shards' folders\n",
                 i + 1, n, code, fp.hash.substr(0, 12), i + 1, n);
      out.worst = out.worst == 0 ? code : out.worst;
      continue;
    }
    out.parts.push_back(last_line(text));
  }
  return out;
}

/// `run --devices`: shard i/N on device devices[i-1], each in a child `prereg run`, at once;
/// then the merge. A failed shard: its exit code, the merge not attempted.
int run_on_devices(const run_options &r, const std::vector<int> &devices) {
  const store s(r.store_root);
  const frozen_protocol fp = resolve_for_run(s, r.target, r.key_path);
  if (!fp.note.empty())
    fmt::print(stderr, "prereg: {}\n", fp.note);
  const auto n = static_cast<std::int64_t>(devices.size());
  (void)shard_cells(fp.proto, {1, n});  // too many shards: exit 2 before anything starts
  (void)load_or_create_key(r.key_path); // once, before the children race to create it
  std::vector<spawned_child> children = start_shards(r, fp, devices);
  const auto [parts, worst] = collect_shards(children, fp);
  if (worst != 0)
    return worst;
  const signing_key key = load_or_create_key(r.key_path);
  const auto dir =
      merge_reports(s, {parts, merge_kind::shards, r.out_dir}, resolve_trust({}, s), key);
  for (const auto &p : parts)
    fmt::print("{}\n", p.string());
  fmt::print("{}\n", dir.string());
  return 0;
}

/// `slurm TASK --grade`: the grading's script (docs/grading.md, "Scale out").
int write_grade_script(const common_options &o, const frozen_protocol &fp, const slurm_options &so,
                       bool gpus_given, const std::string &out_dir, const std::string &work,
                       const std::string &script, const std::string &heldout, bool all) {
  if (!fp.proto.task)
    throw invalid_input(fmt::format("slurm --grade: protocol {} is not a task", fp.proto.id));
  grade::grade_slurm_options g;
  g.prereg = self_exe();
  g.task_hash = fp.hash;
  g.task_id = fp.proto.id;
  if (!heldout.empty())
    g.heldout = std::filesystem::absolute(heldout).lexically_normal();
  g.all = all;
  g.partition = so.partition;
  g.gpus_per_task = gpus_given ? so.gpus_per_task : (fp.proto.device == "cuda" ? 1 : 0);
  g.store = std::filesystem::absolute(store::default_root(o.store_dir)).lexically_normal();
  g.key = std::filesystem::absolute(default_key_path(o.key_file)).lexically_normal();
  g.out = std::filesystem::absolute(out_dir).lexically_normal();
  g.work = std::filesystem::absolute(work.empty() ? "slurm-grade-" + fp.proto.id : work)
               .lexically_normal();
  const std::string text = grade::grade_slurm_script(g);
  if (script.empty())
    fmt::print("{}", text);
  else
    write_file_atomic(script, text);
  return 0;
}

/// The summary of the report in `dir` on stderr (docs/cli.md, "The summary of a run"), read back
/// from its report.json; a report that cannot be read back is a notice (the run completed).
void print_summary(const std::filesystem::path &dir) {
  try {
    const json j = read_report_json(dir.string());
    const report_document doc = report_from_json(j, (dir / "report.json").string());
    for (const auto &line : terminal_summary(doc, dir))
      fmt::print(stderr, "{}\n", line);
  } catch (const error &e) {
    fmt::print(stderr, "prereg: notice: no summary: the report does not read back: {}\n",
               escape_control(e.line()));
  }
}

} // namespace

int cmd_merge(args_t args) {
  CLI::App app{"merge the shards of one protocol (or, with --replication, complete reports from "
               "several devices) into one signed report",
               "merge"};
  common_options o;
  std::vector<std::string> dirs;
  std::vector<std::string> trust;
  std::string out_dir = "reports";
  bool replication = false;
  o.add_store(app);
  o.add_key(app);
  app.add_option("DIRS", dirs, "report folders")->required();
  app.add_option("--out", out_dir, "reports folder (default ./reports)");
  app.add_flag("--replication", replication,
               "pool complete reports by the protocol's frozen replication rule");
  app.add_option("--trust", trust, "accept only these signers in the parts (as for audit)");
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const trust_root t = resolve_trust(trust, s);
  const signing_key key = load_or_create_key(default_key_path(o.key_file));
  merge_options m;
  for (const auto &d : dirs)
    m.parts.emplace_back(d);
  m.kind = replication ? merge_kind::replication : merge_kind::shards;
  m.out_dir = out_dir;
  fmt::print("{}\n", merge_reports(s, m, t, key).string());
  return 0;
}

int cmd_slurm(args_t args) {
  CLI::App app{"write a Slurm submit script: a job array of shards, then a dependent merge job",
               "slurm"};
  common_options o;
  std::string hash;
  std::string out_dir = "reports";
  std::string work;
  std::string script;
  slurm_options so;
  bool gpus_given = false;
  o.add_store(app);
  o.add_key(app);
  app.add_option("HASH", hash, "hash, unique prefix or id")->required();
  auto *shards = app.add_option("--shards", so.shards, "N: one task per shard (not with --grade)");
  app.add_option("--partition", so.partition, "the Slurm partition (default: the cluster's)");
  app.add_option("--gpus-per-task", so.gpus_per_task,
                 "GPUs per task (default 1 for a cuda protocol, none for cpu)")
      ->each([&](const std::string &) { gpus_given = true; });
  app.add_option("--out", out_dir, "reports folder (default ./reports)");
  app.add_option("--work", work, "folder for logs and results (default ./slurm-<id>)");
  app.add_option("-o,--script", script, "write the script to FILE (else stdout)");
  bool grade = false, all = false;
  std::string heldout;
  app.add_flag("--grade", grade,
               "a task: grade its pending submissions as a job array (docs/grading.md)");
  app.add_option("--heldout", heldout, "with --grade: the task's held-out secret");
  app.add_flag("--all", all, "with --grade: every current submission");
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  std::string which;
  const frozen_protocol fp = s.load(s.resolve(hash, &which));
  if (!which.empty())
    fmt::print(stderr, "prereg: notice: {}\n", which);
  if (grade && shards->count() > 0)
    throw invalid_input("slurm: --grade takes no --shards (one array task per submission)");
  if (grade)
    return write_grade_script(o, fp, so, gpus_given, out_dir, work, script, heldout, all);
  if (shards->count() == 0)
    throw invalid_input("slurm: --shards N is required (or --grade for a task)");
  (void)shard_cells(fp.proto, {1, so.shards});
  if (!gpus_given)
    so.gpus_per_task = fp.proto.device == "cuda" ? 1 : 0;
  so.prereg = self_exe();
  so.hash = fp.hash;
  so.protocol_id = fp.proto.id;
  so.store = std::filesystem::absolute(s.root()).lexically_normal();
  so.key = std::filesystem::absolute(default_key_path(o.key_file)).lexically_normal();
  so.out = std::filesystem::absolute(out_dir).lexically_normal();
  so.work =
      std::filesystem::absolute(work.empty() ? "slurm-" + fp.proto.id : work).lexically_normal();
  const std::string text = slurm_script(so);
  if (script.empty())
    fmt::print("{}", text);
  else
    write_file_atomic(script, text);
  return 0;
}

int cmd_run(args_t args) {
  CLI::App app{"verify, measure, judge, write and sign a report", "run"};
  common_options o;
  std::string out_dir = "reports";
  run_options r;
  o.add_store(app);
  o.add_key(app);
  app.add_option("TARGET", r.target, "protocol hash, unique prefix, or frozen FILE.yaml")
      ->required();
  app.add_option("--out", out_dir, "reports folder (default ./reports)");
  app.add_option("--device", r.device_ordinal, "CUDA device ordinal (default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--quiet,-q", r.quiet, "no progress and no summary on stderr");
  std::string shard;
  std::string devices;
  app.add_option("--shard", shard, "K/N: run shard K of N only (docs/scale-out.md)");
  app.add_option("--devices", devices,
                 "ORD,ORD,...: one process per listed device, each a shard, merged at the end");
  std::string instrument_from;
  app.add_option("--instrument-from", instrument_from,
                 "DIR: a grading's baseline report whose launch floor and ceiling a submission's "
                 "run takes (docs/grading.md)");
  if (!parse(app, args))
    return 0;
  if (!shard.empty() && !devices.empty())
    throw invalid_input("run: --shard and --devices exclude each other");
  if (!shard.empty())
    r.shard = parse_shard(shard);
  r.store_root = store::default_root(o.store_dir);
  r.key_path = default_key_path(o.key_file);
  r.out_dir = out_dir;
  r.instrument_from = instrument_from;
  if (!devices.empty())
    return run_on_devices(r, parse_device_list(devices));
  r.make_device = make_default_device;
  r.resolve_arm = builtin_resolver();
  r.isolate = true; // measure in a child that never holds the key (docs/engine.md)
  const auto dir = run_protocol(r);
  if (!r.quiet)
    print_summary(dir);
  fmt::print("{}\n", dir.string());
  return 0;
}

int cmd_try(args_t args) {
  CLI::App app{"run an unfrozen protocol as an EXPLORATORY try: same engine, unsigned, outside "
               "the ledger, never confirmatory",
               "try"};
  std::string out_dir = "exploratory";
  run_options r;
  app.add_option("FILE", r.target, "protocol YAML (need not be frozen)")->required();
  app.add_option("--out", out_dir, "exploratory reports folder (default ./exploratory)");
  app.add_option("--device", r.device_ordinal, "CUDA device ordinal (default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--quiet,-q", r.quiet, "no progress and no summary on stderr");
  if (!parse(app, args))
    return 0;
  r.out_dir = out_dir;
  r.make_device = make_default_device;
  r.resolve_arm = builtin_resolver();
  fmt::print(stderr,
             "prereg: EXPLORATORY try of {}: not frozen, not signed, not in the ledger; "
             "for a confirmatory run, `prereg freeze {}` then `prereg run`\n",
             r.target, r.target);
  r.isolate = true; // the same sandboxed measuring process as a run (docs/engine.md)
  const auto dir = try_protocol(r);
  if (!r.quiet)
    print_summary(dir);
  fmt::print("{}\n", dir.string());
  return 0;
}

} // namespace prereg::cli::detail
