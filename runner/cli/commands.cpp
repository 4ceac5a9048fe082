// The command table: {name, summary, function}; help and unknown-name suggestions come from it.
#include "cli/commands.hpp"

#include "base/suggest.hpp"
#include "cli/command_functions.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace prereg::cli {
namespace {

using namespace detail;

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
    {"seal", "seal held-out shapes and seed: a secret and the commitment a task records", cmd_seal},
    {"submit", "pin a submission to a task: files by SHA-256, a signed ledger entry", cmd_submit},
    {"submissions", "list a task's submissions: pending, graded, superseded", cmd_submissions},
    {"grade", "grade a task's pending submissions into a signed leaderboard", cmd_grade},
    {"reward", "grade one submission against a task: its score, 0 if excluded", cmd_reward},
    {"site", "write a static history site of a store and its reports", cmd_site},
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
    std::vector<std::string> names;
    for (const auto &cand : commands)
      names.emplace_back(cand.name);
    const auto best = closest_match(name, names);
    throw invalid_input(best ? fmt::format("unknown command '{}'; did you mean '{}'?", name, *best)
                             : fmt::format("unknown command '{}'; see `prereg help`", name));
  }
  return c->run(args_t(all.begin() + 1, all.end()));
}

} // namespace prereg::cli
