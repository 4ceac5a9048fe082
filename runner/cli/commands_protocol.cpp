// The commands on a protocol file: freeze, check, canon.
#include "cli/command_functions.hpp"

#include "arms/outside_arm.hpp"
#include "base/expr.hpp"
#include "base/json.hpp"
#include "crypto/keyring.hpp"
#include "prereg/error.hpp"
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

} // namespace

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

} // namespace prereg::cli::detail
