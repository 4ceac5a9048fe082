// The command table: {name, summary, function}; help and unknown-name suggestions come from it.
#include "commands.hpp"

#include "analysis/compare.hpp"
#include "arms/outside_arm.hpp"
#include "audit/audit.hpp"
#include "base/expr.hpp"
#include "base/fs.hpp"
#include "base/json.hpp"
#include "crypto/crypto.hpp"
#include "crypto/keyring.hpp"
#include "model/report_model.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"
#include "report/report_text.hpp"
#include "run/merge.hpp"
#include "run/run.hpp"
#include "run/slurm.hpp"
#include "spec/protocol.hpp"
#include "spec/registry.hpp"
#include "spec/shard.hpp"
#include "store/bundle.hpp"
#include "store/ledger.hpp"
#include "store/store.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace prereg::cli {
namespace {

using args_t = std::vector<std::string>;

/// Options shared by every command.
struct common_options {
  std::string store_dir;
  std::string key_file;
  void add_store(CLI::App &app) {
    app.add_option("--store", store_dir, "store folder (else $PREREG_STORE, else ./.prereg)");
  }
  void add_key(CLI::App &app) {
    app.add_option("--key", key_file,
                   "signing key (else $PREREG_KEY, else ~/.config/prereg/signing.key)");
  }
  [[nodiscard]] store open_store() const { return store(store::default_root(store_dir)); }
};

/// Parses `args` with `app`; returns false when help was printed.
bool parse(CLI::App &app, args_t args) {
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp &) {
    fmt::print("{}", app.help());
    return false;
  } catch (const CLI::ParseError &e) {
    throw invalid_input(fmt::format("{}: {}", app.get_name(), e.what()));
  }
  return true;
}

bool is_yaml_path(const std::string &path) {
  return path.ends_with(".yaml") || path.ends_with(".yml");
}

/// The signing key path that --key (or the environment) names, or empty if there is none.
std::filesystem::path configured_key_path(const std::string &flag) {
  try {
    return default_key_path(flag);
  } catch (const error &) {
    return {};
  }
}

protocol parse_protocol_file(const std::string &file, const std::string &key_flag,
                             std::string *bytes_out = nullptr) {
  std::string bytes = read_protocol_file(file, configured_key_path(key_flag));
  protocol p = parse_protocol(bytes, file);
  if (bytes_out)
    *bytes_out = std::move(bytes);
  return p;
}

/// Warns on stderr about each prediction whose outcome does not depend on the data.
void warn_vacuous_predictions(const protocol &p) {
  std::vector<std::string> arm_ids;
  for (const auto &a : p.arms)
    arm_ids.push_back(a.id);
  for (const auto &pr : p.predictions) {
    const auto outcome = expectation::parse(pr.expect, arm_ids, "").constant_outcome();
    if (outcome)
      fmt::print(stderr,
                 "prereg: warning: prediction {} ({}) {} holds for any values of its arms: no "
                 "measurement can decide it\n",
                 pr.id, escape_control(pr.expect), *outcome ? "always" : "never");
  }
}

int cmd_freeze(args_t args) {
  CLI::App app{"validate, normalise, hash, store, sign and ledger a protocol", "freeze"};
  common_options o;
  std::string file;
  o.add_store(app);
  o.add_key(app);
  app.add_option("FILE", file, "protocol YAML")->required();
  if (!parse(app, args))
    return 0;
  std::string bytes;
  const protocol p = parse_protocol_file(file, o.key_file, &bytes);
  warn_vacuous_predictions(p);
  const signing_key key = load_or_create_key(default_key_path(o.key_file));
  const store s = o.open_store();
  const freeze_outcome r = s.freeze(bytes, p, key, std::filesystem::absolute(file).parent_path());
  if (r.repaired)
    fmt::print("{} was stored but its freeze was not in the ledger (an interrupted freeze): "
               "recorded it now\n",
               p.id);
  if (r.already_frozen && r.cosmetic_only)
    fmt::print("{} is already frozen (nothing written): this file differs from the frozen source "
               "only in comments or formatting, and `prereg run {}` runs the frozen protocol\n",
               p.id, file);
  else if (r.already_frozen)
    fmt::print("{} is already frozen (idempotent: nothing written)\n", p.id);
  else
    fmt::print("frozen {} in {} (signer {})\n", p.id, s.root().string(),
               key.fingerprint().substr(0, 16));
  if (r.kernel_problem)
    fmt::print(stderr, "prereg: warning: {}\n", *r.kernel_problem);
  fmt::print("{}\n", r.hash);
  return 0;
}

int cmd_check(args_t args) {
  CLI::App app{"validate a protocol and print the hash it would get; stores nothing", "check"};
  std::string file;
  app.add_option("FILE", file, "protocol YAML")->required();
  if (!parse(app, args))
    return 0;
  const protocol p = parse_protocol_file(file, "");
  warn_vacuous_predictions(p);
  // Outside arms: their files must exist; a plugin's table must name the arm as the protocol
  // uses it (loading it runs its code: check holds no key).
  const auto dir = std::filesystem::absolute(file).parent_path();
  for (const auto &a : p.arms) {
    if (!a.outside())
      continue;
    const auto path = outside_file(dir, a.file);
    const std::string digest = outside_file_sha256(path, a.id);
    if (a.source == arm_source::plugin)
      (void)load_plugin_arm(path, a.entry, p, a.id);
    fmt::print("  arm {}: {} sha256 {}\n", a.id, escape_control(a.label()), digest.substr(0, 16));
  }
  fmt::print("{}: valid protocol {} ({} arms, {} predictions)\n", escape_control(file), p.id,
             p.arms.size(), p.predictions.size());
  fmt::print("{}\n", protocol_hash(p));
  return 0;
}

int cmd_canon(args_t args) {
  CLI::App app{"print the RFC 8785 canonical bytes of a JSON file or a normalised protocol",
               "canon"};
  std::string file;
  app.add_option("FILE", file, "a .json file, or a protocol .yaml/.yml")->required();
  if (!parse(app, args))
    return 0;
  std::string out;
  if (is_yaml_path(file))
    out = canonical_json(to_json(parse_protocol_file(file, "")));
  else
    out =
        canonical_json(parse_json_strict(read_protocol_file(file, configured_key_path("")), file));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int cmd_keygen(args_t args) {
  CLI::App app{"create an Ed25519 signing key pair", "keygen"};
  common_options o;
  bool force = false;
  o.add_key(app);
  app.add_flag("--force", force, "replace an existing key");
  if (!parse(app, args))
    return 0;
  const auto path = default_key_path(o.key_file);
  const signing_key key = signing_key::generate();
  key.save(path, force); // without --force: refused if the key, its .pub or a link is there
  fmt::print(stderr, "prereg: wrote {} (mode 0600) and its public key beside it\n", path.string());
  fmt::print("{}\n", key.fingerprint());
  return 0;
}

int cmd_list(args_t args) {
  CLI::App app{"list frozen protocols", "list"};
  common_options o;
  o.add_store(app);
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const auto &entries = s.get_ledger().entries();
  fmt::print("{:<64}  {:<24}  {:<27}  {:>4}  {}\n", "hash", "id", "frozen-at", "runs", "title");
  for (const auto &h : s.hashes()) {
    const frozen_protocol fp = s.load(h);
    fmt::print("{:<64}  {:<24}  {:<27}  {:>4}  {}\n", h, fp.proto.id,
               fp.freeze.value("frozen_at", ""), attempts_of(entries, h),
               escape_control(fp.proto.title));
  }
  return 0;
}

int cmd_show(args_t args) {
  CLI::App app{"show a frozen protocol, its freeze record and its runs", "show"};
  common_options o;
  std::string hash;
  o.add_store(app);
  app.add_option("HASH", hash, "hash or unique prefix")->required();
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const frozen_protocol fp = s.load(s.resolve(hash));
  fmt::print("protocol {}\n  id: {}\n  title: {}\n  hypothesis: {}\n  device: {}  operation: {}  "
             "dtype: {}\n",
             fp.hash, fp.proto.id, escape_control(fp.proto.title),
             escape_control(fp.proto.hypothesis), fp.proto.device, fp.proto.op,
             to_string(fp.proto.type));
  fmt::print("  arms:");
  for (const auto &a : fp.proto.arms)
    fmt::print(" {}={}", a.id, a.kernel);
  fmt::print("\n  predictions:\n");
  for (const auto &pr : fp.proto.predictions)
    fmt::print("    {}: {}  [expect {}]\n", pr.id, escape_control(pr.claim),
               escape_control(pr.expect));
  fmt::print("freeze record\n  frozen_at: {}\n  signer: {}\n  source_sha256: {}\n  tool_version: "
             "{}\n  kernels:\n",
             fp.freeze.value("frozen_at", ""), fp.freeze.value("signer", ""),
             fp.freeze.value("source_sha256", ""), fp.freeze.value("tool_version", ""));
  for (const auto &[arm, k] : fp.freeze.at("kernels").items())
    fmt::print("    {}: {} {}\n", arm, k.value("kernel", ""), k.value("source_sha256", ""));
  fmt::print("runs\n");
  std::size_t n = 0;
  for (const auto &e : s.get_ledger().entries()) {
    if (e.value("protocol_hash", "") != fp.hash || e.value("event", "") == "freeze")
      continue;
    ++n;
    fmt::print(
        "  seq {:>4}  {}  {:<13} {}{}\n", e.value("seq", 0), e.value("time", ""),
        e.value("event", ""), e.value("run_id", ""),
        e.contains("report_sha256")
            ? " report " + e.value("report_sha256", "").substr(0, 16)
            : (e.contains("reason") ? " (" + escape_control(e.value("reason", "")) + ")" : ""));
  }
  if (n == 0)
    fmt::print("  (none)\n");
  return 0;
}

int cmd_ledger(args_t args) {
  CLI::App app{"check the ledger, or write a signed checkpoint of its head", "ledger"};
  common_options o;
  std::string action;
  std::vector<std::string> trust;
  std::vector<std::string> checkpoints;
  std::string out;
  o.add_store(app);
  o.add_key(app);
  app.add_option("ACTION", action, "verify | checkpoint")
      ->required()
      ->check(CLI::IsMember({"verify", "checkpoint"}));
  app.add_option("--trust", trust,
                 "verify: accept only this signer: a PEM FILE, a DIR of *.pub or a FINGERPRINT "
                 "(repeatable)");
  app.add_option("--checkpoint", checkpoints,
                 "verify: fail unless the ledger still holds this checkpoint FILE (repeatable)");
  app.add_option("--out", out, "checkpoint: write it to FILE (else stdout)");
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const ledger l = s.get_ledger();
  if (action == "checkpoint") {
    const signing_key key = load_or_create_key(default_key_path(o.key_file));
    const std::string text = canonical_json(make_checkpoint(l, key)) + "\n";
    if (out.empty())
      fmt::print("{}", text);
    else
      write_file_atomic(out, text);
    return 0;
  }
  const trust_root t = resolve_trust(trust, s);
  const key_lookup keys = [&](const std::string &fp) { return t.find(s, fp); };
  const auto n = l.verify(keys);
  const std::vector<std::string> signers = l.last_signers();
  std::string held;
  for (const auto &c : checkpoints) {
    const json cp = parse_json_strict(read_file(c, 1 << 16), c);
    held += fmt::format(", holds checkpoint seq {}", check_checkpoint(l, cp, keys, c));
  }
  fmt::print("ok {} entries{}\n", n, held);
  fmt::print("trust: {}\n", escape_control(t.describe(s, signers)));
  return 0;
}

/// Whether this machine can serve protocols of device `kind`: "usable: NAME", or why not.
struct device_probe {
  bool usable = false;
  std::string detail;
};

device_probe probe_device(const std::string &kind, int ordinal) {
  try {
    const auto dev = make_default_device(kind, ordinal);
    return {true, dev->probe().value("device_name", "unknown")};
  } catch (const error &e) {
    if (e.code() != exit_code::environment)
      throw;
    return {false, e.what()};
  }
}

int cmd_arms(args_t args) {
  CLI::App app{"the kernels this build knows, with device, source hash and whether this machine "
               "can run them (probed)",
               "arms"};
  std::string plugin;
  app.add_option("--plugin", plugin, "list the arms of a plugin library instead (docs/plugins.md)");
  if (!parse(app, args))
    return 0;
  if (!plugin.empty()) {
    const auto arms = list_plugin(plugin);
    fmt::print("{}: {} arm(s), ABI {}, sha256 {}\n", plugin, arms.size(), 1,
               outside_file_sha256(plugin, "--plugin").substr(0, 16));
    fmt::print("{:<24} {:<10} {:<6} {:<15} {:<12} {}\n", "name", "operation", "device", "dtypes",
               "passes", "summary");
    for (const auto &a : arms)
      fmt::print("{:<24} {:<10} {:<6} {:<15} {:<12} {}\n", a.name, a.operation, a.device, a.dtypes,
                 a.passes, a.summary);
    return 0;
  }
  std::vector<std::pair<std::string, device_probe>> probed;
  const auto runnable = [&](const std::string &kind) -> const device_probe & {
    for (const auto &[k, p] : probed)
      if (k == kind)
        return p;
    return probed.emplace_back(kind, probe_device(kind, 0)).second;
  };
  fmt::print("{:<6} {:<20} {:<10} {:<15} {:<8} {:<16} {}\n", "device", "kernel", "operation",
             "dtypes", "passes", "source", "runnable here (probed)");
  for (const auto &a : all_arms()) {
    // Joined piece by piece: "," + string trips GCC 12's -Wrestrict (a false positive).
    std::string dts;
    for (auto d : a.dtypes)
      (dts.empty() ? dts : dts += ',') += to_string(d);
    std::string passes;
    for (auto p : a.passes)
      (passes.empty() ? passes : passes += ',') += p == pass_kind::fwd ? "fwd" : "bwd";
    const device_probe &here = runnable(a.device);
    fmt::print("{:<6} {:<20} {:<10} {:<15} {:<8} {:<16} {}\n", a.device, a.name, a.op, dts, passes,
               a.source_sha256.substr(0, 16),
               here.usable ? "yes" : fmt::format("no ({})", here.detail));
  }
  return 0;
}

int cmd_devices(args_t args) {
  CLI::App app{"probe the devices a protocol can name: usable here, or why not; exit 0 if every "
               "probed device is usable, else 5",
               "devices"};
  std::vector<std::string> kinds;
  int ordinal = 0;
  app.add_option("KIND", kinds, "cpu | cuda (default: both)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--device", ordinal, "CUDA device ordinal (default 0)")
      ->check(CLI::NonNegativeNumber);
  if (!parse(app, args))
    return 0;
  if (kinds.empty())
    kinds = {"cpu", "cuda"};
  bool all_usable = true;
  for (const auto &kind : kinds) {
    const device_probe p = probe_device(kind, ordinal);
    all_usable = all_usable && p.usable;
    fmt::print("{}: {}{}\n", kind, p.usable ? "usable: " : "not usable: ", p.detail);
  }
  return all_usable ? 0 : static_cast<int>(exit_code::environment);
}

/// The path of this binary, for the processes it starts.
std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw io_error("cannot find this program's own path (/proc/self/exe)");
  return p.string();
}

/// `run --devices`: shard i/N on device devices[i-1], each in a child `prereg run`, at once;
/// then the merge. A failed shard: its exit code, the merge not attempted.
int run_on_devices(const run_options &r, const std::vector<int> &devices) {
  const store s(r.store_root);
  const frozen_protocol fp = resolve_for_run(s, r.target, r.key_path);
  const auto n = static_cast<std::int64_t>(devices.size());
  (void)shard_cells(fp.proto, {1, n});  // too many shards: exit 2 before anything starts
  (void)load_or_create_key(r.key_path); // once, before the children race to create it
  const std::string exe = self_exe();
  struct child {
    pid_t pid;
    int out;
    std::string text;
  };
  std::vector<child> children;
  for (std::int64_t k = 1; k <= n; ++k) {
    std::vector<std::string> argv{exe,
                                  "run",
                                  fp.hash,
                                  "--shard",
                                  to_string(shard_spec{k, n}),
                                  "--device",
                                  std::to_string(devices[static_cast<std::size_t>(k - 1)]),
                                  "--store",
                                  r.store_root.string(),
                                  "--key",
                                  r.key_path.string(),
                                  "--out",
                                  r.out_dir.string(),
                                  "--quiet"};
    int fds[2];
    if (::pipe(fds) != 0)
      throw io_error("cannot create a pipe for a shard process");
    const pid_t pid = ::fork();
    if (pid < 0)
      throw io_error("cannot fork a shard process");
    if (pid == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char *> cargv;
      for (auto &a : argv)
        cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execv(exe.c_str(), cargv.data());
      std::_Exit(127);
    }
    ::close(fds[1]);
    children.push_back({pid, fds[0], {}});
    fmt::print(stderr, "prereg: shard {}/{} on device {}: pid {}\n", k, n,
               devices[static_cast<std::size_t>(k - 1)], pid);
  }
  int worst = 0;
  std::vector<std::filesystem::path> parts;
  for (std::size_t i = 0; i < children.size(); ++i) {
    auto &c = children[i];
    char buf[4096];
    ssize_t got;
    while ((got = ::read(c.out, buf, sizeof buf)) != 0) {
      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0)
        break;
      c.text.append(buf, static_cast<std::size_t>(got));
    }
    ::close(c.out);
    int status = 0;
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code != 0) {
      fmt::print(stderr,
                 "prereg: shard {}/{} failed (exit {}); rerun it with `prereg run {} "
                 "--shard {}/{}`, then `prereg merge` the shards' folders\n",
                 i + 1, n, code, fp.hash.substr(0, 12), i + 1, n);
      worst = worst == 0 ? code : worst;
      continue;
    }
    while (!c.text.empty() && c.text.back() == '\n')
      c.text.pop_back();
    const auto nl = c.text.rfind('\n');
    parts.emplace_back(nl == std::string::npos ? c.text : c.text.substr(nl + 1));
  }
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

int cmd_export(args_t args) {
  CLI::App app{"write a frozen protocol as a self-contained, verifiable JSON bundle", "export"};
  common_options o;
  std::string hash;
  o.add_store(app);
  app.add_option("HASH", hash, "hash, unique prefix or id")->required();
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  fmt::print("{}\n", canonical_json(export_bundle(s, s.resolve(hash))));
  return 0;
}

int cmd_import(args_t args) {
  CLI::App app{"verify a bundle from `prereg export` and store its frozen protocol", "import"};
  common_options o;
  std::string file;
  std::vector<std::string> trust;
  o.add_store(app);
  o.add_key(app);
  app.add_option("FILE", file, "a bundle written by `prereg export`")->required();
  app.add_option("--trust", trust,
                 "accept only this freeze signer: a PEM FILE, a DIR of *.pub or a FINGERPRINT "
                 "(repeatable; default: the store's trust.json, if any)");
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const json bundle = parse_json_strict(read_file(file, 1 << 24), file);
  const signing_key key = load_or_create_key(default_key_path(o.key_file));
  s.add_key(key.public_part());
  const trust_root t = resolve_trust(trust, s);
  const import_outcome r = import_bundle(s, bundle, file, t, key);
  if (r.already_present)
    fmt::print("{} is already in this store (nothing written)\n", r.protocol_id);
  else
    fmt::print("imported {} frozen by {} into {}{}\n", r.protocol_id, r.signer.substr(0, 16),
               s.root().string(),
               t.pinned() ? "" : " (signer not pinned: no trust.json, no --trust)");
  fmt::print("{}\n", r.hash);
  return 0;
}

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
  app.add_option("--shards", so.shards, "N: one task per shard")->required();
  app.add_option("--partition", so.partition, "the Slurm partition (default: the cluster's)");
  app.add_option("--gpus-per-task", so.gpus_per_task,
                 "GPUs per task (default 1 for a cuda protocol, none for cpu)")
      ->each([&](const std::string &) { gpus_given = true; });
  app.add_option("--out", out_dir, "reports folder (default ./reports)");
  app.add_option("--work", work, "folder for logs and results (default ./slurm-<id>)");
  app.add_option("-o,--script", script, "write the script to FILE (else stdout)");
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const frozen_protocol fp = s.load(s.resolve(hash));
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
  app.add_flag("--quiet,-q", r.quiet, "no progress on stderr");
  std::string shard;
  std::string devices;
  app.add_option("--shard", shard, "K/N: run shard K of N only (docs/scale-out.md)");
  app.add_option("--devices", devices,
                 "ORD,ORD,...: one process per listed device, each a shard, merged at the end");
  if (!parse(app, args))
    return 0;
  if (!shard.empty() && !devices.empty())
    throw invalid_input("run: --shard and --devices exclude each other");
  if (!shard.empty())
    r.shard = parse_shard(shard);
  r.store_root = store::default_root(o.store_dir);
  r.key_path = default_key_path(o.key_file);
  r.out_dir = out_dir;
  if (!devices.empty())
    return run_on_devices(r, parse_device_list(devices));
  r.make_device = make_default_device;
  r.resolve_arm = builtin_resolver();
  r.isolate = true; // measure in a child that never holds the key (docs/engine.md)
  const auto dir = run_protocol(r);
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
  app.add_flag("--quiet,-q", r.quiet, "no progress on stderr");
  if (!parse(app, args))
    return 0;
  r.out_dir = out_dir;
  r.make_device = make_default_device;
  r.resolve_arm = builtin_resolver();
  fmt::print(stderr,
             "prereg: EXPLORATORY try of {}: not frozen, not signed, not in the ledger; "
             "for a confirmatory run, `prereg freeze {}` then `prereg run`\n",
             r.target, r.target);
  fmt::print("{}\n", try_protocol(r).string());
  return 0;
}

json read_report_json(const std::string &dir) {
  const auto path = std::filesystem::path(dir) / "report.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw invalid_input("not a report folder: it has no report.json", dir);
  return parse_json_strict(read_file(path), path.string());
}

int cmd_audit(args_t args) {
  CLI::App app{"re-check a report against its frozen protocol and its own raw data", "audit"};
  common_options o;
  std::string dir;
  std::vector<std::string> trust;
  std::vector<std::string> checkpoints;
  bool as_json = false;
  o.add_store(app);
  app.add_option("REPORT_DIR", dir, "a report folder")->required();
  app.add_option("--trust", trust,
                 "accept only this signer: a PEM FILE, a DIR of *.pub or a FINGERPRINT of a key "
                 "in the store (repeatable)");
  app.add_option("--checkpoint", checkpoints,
                 "fail unless the ledger still holds this checkpoint FILE (repeatable)");
  app.add_flag("--json", as_json, "print the checks as JSON");
  if (!parse(app, args))
    return 0;
  const store s = o.open_store();
  const std::vector<std::filesystem::path> cps(checkpoints.begin(), checkpoints.end());
  const audit_result r = is_merged_report(dir)
                             ? audit_merged_report(dir, s, resolve_trust(trust, s), cps)
                             : audit_report(dir, s, resolve_trust(trust, s), cps);
  fmt::print("{}", as_json ? render_audit_json(r) : render_audit_text(r));
  return static_cast<int>(r.exit());
}

int cmd_report(args_t args) {
  CLI::App app{"regenerate report.md and report.html from report.json alone", "report"};
  std::string dir;
  std::string format = "both";
  app.add_option("REPORT_DIR", dir, "a report folder")->required();
  app.add_option("--format", format, "md | html (default: both, written into the folder)")
      ->check(CLI::IsMember({"md", "html", "both"}));
  if (!parse(app, args))
    return 0;
  const auto folder = std::filesystem::path(dir);
  const report_document report =
      report_from_json(read_report_json(dir), (folder / "report.json").string());
  if (format == "md" || format == "both")
    write_file_atomic(folder / "report.md", render_markdown(report));
  if (format == "html" || format == "both")
    write_file_atomic(folder / "report.html", render_html(report));
  fmt::print("{}\n", folder.string());
  return 0;
}

/// --min-effect: a fraction (0.05) or a percentage (5%).
double parse_min_effect(const std::string &text) {
  const bool pct = text.ends_with('%');
  const std::string number = pct ? text.substr(0, text.size() - 1) : text;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(number, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != number.size())
    throw invalid_input(fmt::format("compare: --min-effect must be a fraction (0.05) or a "
                                    "percentage (5%), got '{}'",
                                    text));
  return pct ? v / 100.0 : v;
}

int cmd_compare(args_t args) {
  CLI::App app{"ratio of medians per common cell of two sides of reports, with a bootstrap "
               "interval (`compare A B`, or `compare A1 A2 ... --vs B1 B2 ...`)",
               "compare"};
  std::vector<std::string> a_dirs;
  std::vector<std::string> b_dirs;
  std::string min_effect = "5%";
  bool as_json = false;
  app.add_option("DIRS", a_dirs,
                 "A_DIR B_DIR; with --vs, the baseline side's report folders (one run or more)")
      ->required();
  app.add_option("--vs", b_dirs, "the report folders compared with them (one run or more)");
  app.add_option("--min-effect", min_effect,
                 "ratios within this of 1 are 'same' (fraction or percentage; default 5%)");
  app.add_flag("--json", as_json, "print the comparison as canonical JSON");
  if (!parse(app, args))
    return 0;
  if (b_dirs.empty()) {
    if (a_dirs.size() != 2)
      throw invalid_input(fmt::format("compare: give A_DIR B_DIR, or A_DIR... --vs B_DIR... "
                                      "(got {} folder(s) and no --vs)",
                                      a_dirs.size()));
    b_dirs = {a_dirs[1]};
    a_dirs.resize(1);
  }
  const auto load = [](const std::vector<std::string> &dirs) {
    std::vector<report_document> out;
    for (const auto &d : dirs)
      out.push_back(report_from_json(read_report_json(d), d + "/report.json"));
    return out;
  };
  const json cmp = compare_reports(load(a_dirs), load(b_dirs), parse_min_effect(min_effect));
  if (as_json)
    fmt::print("{}\n", canonical_json(cmp));
  else
    fmt::print("{}", render_comparison(cmp));
  return 0;
}

struct command {
  const char *name;
  const char *summary;
  int (*run)(args_t);
};

int cmd_help(args_t args);

constexpr command commands[] = {
    {"freeze", "validate, normalise, hash, store, sign and ledger a protocol", cmd_freeze},
    {"check", "validate a protocol and print the hash it would get", cmd_check},
    {"canon", "print RFC 8785 canonical bytes of a JSON file or a protocol", cmd_canon},
    {"run", "verify, measure, judge, write and sign a report", cmd_run},
    {"try", "run an unfrozen protocol: an EXPLORATORY report, unsigned, no ledger", cmd_try},
    {"audit", "re-check a report from its raw data", cmd_audit},
    {"report", "regenerate report.md / report.html from report.json", cmd_report},
    {"compare", "compare two reports cell by cell", cmd_compare},
    {"merge", "merge shards (or replications) into one signed report", cmd_merge},
    {"export", "write a frozen protocol as a verifiable bundle", cmd_export},
    {"import", "verify and store a bundle from `prereg export`", cmd_import},
    {"slurm", "write a Slurm job-array script of shards and a merge", cmd_slurm},
    {"keygen", "create an Ed25519 signing key pair", cmd_keygen},
    {"list", "list frozen protocols", cmd_list},
    {"show", "show a frozen protocol, its freeze record and its runs", cmd_show},
    {"ledger", "`ledger verify` the chain and signatures; `ledger checkpoint` its head",
     cmd_ledger},
    {"arms", "the kernels this build knows; runnable here after probing", cmd_arms},
    {"devices", "probe the cpu and cuda devices: usable here, or why not", cmd_devices},
    {"help", "help on a command", cmd_help},
};

const command *find_command(std::string_view name) {
  for (const auto &c : commands)
    if (name == c.name)
      return &c;
  return nullptr;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

void print_usage() {
  fmt::print("prereg {} — pre-registered GPU kernel experiments\n\nusage: prereg COMMAND "
             "[OPTIONS]\n\ncommands:\n",
             build_info::version);
  for (const auto &c : commands)
    fmt::print("  {:<8} {}\n", c.name, c.summary);
  fmt::print("\n`prereg help COMMAND` or `prereg COMMAND --help` for a command's options.\n");
}

int cmd_help(args_t args) {
  if (args.empty()) {
    print_usage();
    return 0;
  }
  const command *c = find_command(args.front());
  if (c == nullptr || std::string_view(c->name) == "help")
    throw invalid_input(fmt::format("no command '{}'", args.front()));
  return c->run({"--help"});
}

} // namespace

int run_command_line(int argc, char **argv) {
  const args_t all(argv + 1, argv + argc);
  if (all.empty()) {
    print_usage();
    return 2;
  }
  const std::string &name = all.front();
  if (name == "--version" || name == "version") {
    fmt::print("prereg {} ({}; {})\n", build_info::version, build_info::git_commit,
               build_info::build_flags);
    return 0;
  }
  if (name == "--help" || name == "-h") {
    print_usage();
    return 0;
  }
  const command *c = find_command(name);
  if (c == nullptr) {
    const command *best = nullptr;
    std::size_t best_d = 3;
    for (const auto &cand : commands) {
      const auto d = edit_distance(name, cand.name);
      if (d < best_d)
        best_d = d, best = &cand;
    }
    throw invalid_input(
        best ? fmt::format("unknown command '{}'; did you mean '{}'?", name, best->name)
             : fmt::format("unknown command '{}'; see `prereg help`", name));
  }
  return c->run(args_t(all.begin() + 1, all.end()));
}

} // namespace prereg::cli
