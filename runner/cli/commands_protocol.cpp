// The commands on a protocol file: freeze, check, canon.
#include "cli/command_functions.hpp"

#include "arms/outside_arm.hpp"
#include "base/expr.hpp"
#include "base/json.hpp"
#include "crypto/keyring.hpp"
#include "device/device.hpp"
#include "prereg/error.hpp"
#include "run/arm_check.hpp"
#include "run/dry_run.hpp"
#include "run/source_changes.hpp"
#include "spec/arm_code.hpp"
#include "spec/operation.hpp"
#include "spec/outside_file.hpp"
#include "spec/protocol.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace prereg::cli::detail {
namespace {

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

/// What loading the outside arms and the dry run found: each outside arm's file digest and what
/// loaded it, by arm order; the dry run's line ("" when none ran).
struct loaded_here {
  std::vector<std::pair<std::string, std::string>> arms;
  std::string dry_run;
};

/// Every outside arm of `p` (from the protocol file `file`) loaded on this machine, in a child
/// process (run/arm_check.hpp), and unless `dry_run` is false the dry run in the same child
/// (run/dry_run.hpp), in a sandbox that protects `walls`: a file that is missing, an arm whose
/// own code fails, or a failure of the dry run is exit 2; what the environment prevents is a
/// notice.
loaded_here load_outside_arms(const protocol &p, const std::string &file,
                              const loading_paths &walls, bool dry_run) {
  const auto dir = std::filesystem::absolute(file).parent_path();
  loaded_here out;
  for (const auto &a : p.arms)
    if (a.outside())
      out.arms.emplace_back(outside_file_sha256(outside_file(dir, a.file), a.id), "");
  const dry_run_request dry{builtin_resolver()};
  const arm_load_result loaded =
      load_arms_here(p, dir, make_default_device, walls, dry_run ? &dry : nullptr);
  if (loaded.isolation)
    notice_isolation(*loaded.isolation, "the arms");
  if (!loaded.device_notice.empty() && !loaded.arms.empty())
    fmt::print(stderr,
               "prereg: notice: {}; the outside arms were loaded, but they cannot be set up or "
               "run on this machine\n",
               escape_control(loaded.device_notice));
  for (std::size_t i = 0; i < loaded.arms.size() && i < out.arms.size(); ++i) {
    const arm_load_report &r = loaded.arms[i];
    if (!r.notice.empty())
      fmt::print(stderr,
                 "prereg: notice: not checked on this machine (the environment, not the "
                 "protocol): {}\n",
                 escape_control(r.notice));
    out.arms[i].second = r.loaded;
  }
  if (dry_run) {
    for (const auto &n : dry_run_notices(loaded.dry_run))
      fmt::print(stderr, "prereg: notice: {}\n", n);
    out.dry_run = dry_run_line(loaded.dry_run, p);
  }
  return out;
}

/// After freezing a new version: a notice naming the id's other frozen versions and which one
/// `prereg run ID` now takes (the highest revision; none when two share it).
void notice_other_versions(const store &s, const protocol &p, const std::string &hash) {
  const std::vector<frozen_version> all = s.versions_of(p.id);
  std::vector<frozen_version> others;
  for (const auto &v : all)
    if (v.hash != hash)
      others.push_back(v);
  if (others.empty())
    return;
  const frozen_version *newest = newest_version(all);
  const std::string then =
      newest == nullptr
          ? fmt::format("revision {} is frozen more than once, so `prereg run {}` will need a "
                        "hash or a prefix (`prereg run {}`); set `revision: {}` to make this one "
                        "the newest",
                        p.revision, p.id, hash.substr(0, 12), p.revision + 1)
      : newest->hash == hash
          ? fmt::format("`prereg run {}` runs this one, the newest revision", p.id)
          : fmt::format("`prereg run {}` runs {} (revision {}), the newest; this one with "
                        "`prereg run {}`",
                        p.id, newest->hash.substr(0, 12), newest->revision, hash.substr(0, 12));
  fmt::print(stderr,
             "prereg: notice: protocol {} now has {} frozen versions: this one {} (revision {}) "
             "and {}; {}\n",
             p.id, others.size() + 1, hash.substr(0, 12), p.revision, versions_text(others), then);
}

/// `check`: a notice when the store holds this protocol frozen and an arm's code changed since
/// (as `freeze` warns); nothing when the store does not hold it. Reads only.
void notice_frozen_changes(const store &s, const protocol &p) {
  const std::string hash = protocol_hash(p);
  std::error_code ec;
  if (!std::filesystem::exists(s.protocol_dir(hash) / "freeze.json", ec))
    return;
  try {
    if (const auto problem =
            kernel_source_problem(s.load(hash), s.project_root(), python_source_changes))
      fmt::print(stderr, "prereg: notice: this protocol is frozen in {} as {}, but {}\n",
                 escape_control(s.root().string()), hash.substr(0, 12), escape_control(*problem));
  } catch (const error &e) {
    fmt::print(stderr, "prereg: notice: the frozen copy of this protocol in {} does not load: {}\n",
               escape_control(s.root().string()), escape_control(e.line()));
  }
}

} // namespace

int cmd_freeze(args_t args) {
  CLI::App app{"validate, normalise, hash, store, sign and ledger a protocol", "freeze"};
  common_options o;
  std::string file;
  o.add_store(app);
  o.add_key(app);
  app.add_option("FILE", file, "protocol YAML")->required();
  bool no_dry_run = false;
  app.add_flag("--no-dry-run", no_dry_run,
               "skip the dry run (each arm and the reference called once before storing)");
  if (!parse(app, args))
    return 0;
  std::string bytes;
  const protocol p = parse_protocol_file(file, o.key_file, o.store_dir, &bytes);
  warn_vacuous_predictions(p);
  // Before the key is loaded, in a sandboxed process without it that masks the key --key names:
  // the outside arms, then the dry run.
  const loaded_here loaded =
      load_outside_arms(p, file, loading_walls(o.key_file, o.store_dir), !no_dry_run);
  if (!loaded.dry_run.empty())
    fmt::print("{}\n", loaded.dry_run);
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
  if (!r.already_frozen)
    notice_other_versions(s, p, r.hash);
  fmt::print("{}\n", r.hash);
  return 0;
}

int cmd_check(args_t args) {
  CLI::App app{"validate a protocol, load its outside arms and print the hash it would get; "
               "stores nothing",
               "check"};
  common_options o;
  std::string file;
  o.add_store(app);
  app.add_option("FILE", file, "protocol YAML")->required();
  bool no_dry_run = false;
  app.add_flag("--no-dry-run", no_dry_run,
               "skip the dry run (each arm and the reference called once)");
  if (!parse(app, args))
    return 0;
  const protocol p = parse_protocol_file(file, "", o.store_dir);
  warn_vacuous_predictions(p);
  // Outside arms: loaded here in a sandboxed child process (check holds no key): a plugin's
  // table must name the arm as the protocol uses it, a Python file must import and define the
  // function; then the dry run in the same child calls each arm and the reference once.
  const loaded_here loaded =
      load_outside_arms(p, file, loading_walls("", o.store_dir), !no_dry_run);
  if (const operation_desc *op = find_operation(p.op); op != nullptr && op->outside) {
    std::vector<std::string> tensors;
    for (const auto &t : op->tensors) { // a 0-dim shape, a type beyond fp32 and dtype: said
      std::vector<std::string> notes;
      if (t.dims.empty())
        notes.emplace_back("0-dim");
      if (t.element == element_rule::fixed && t.fixed != dtype::fp32)
        notes.emplace_back(to_string(t.fixed));
      tensors.push_back(notes.empty() ? t.name
                                      : fmt::format("{} ({})", t.name, fmt::join(notes, " ")));
    }
    fmt::print("  operation {}: python {} sha256 {}, tensors {}\n", p.op, escape_control(p.op_file),
               outside_file_sha256(op->file, "operation " + p.op).substr(0, 16),
               fmt::join(tensors, ", "));
  }
  std::size_t i = 0;
  for (const auto &a : p.arms) {
    if (!a.outside())
      continue;
    const auto &[digest, with] = loaded.arms[i++];
    fmt::print("  arm {}: {} sha256 {}{}\n", a.id, escape_control(a.label()), digest.substr(0, 16),
               with.empty() ? "" : fmt::format(", imported with {}", escape_control(with)));
  }
  if (!loaded.dry_run.empty())
    fmt::print("  {}\n", loaded.dry_run);
  notice_frozen_changes(o.open_store(), p);
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
    out = canonical_json(to_json(parse_protocol_file(file, "", "")));
  else
    out =
        canonical_json(parse_json_strict(read_protocol_file(file, configured_key_path("")), file));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

} // namespace prereg::cli::detail
