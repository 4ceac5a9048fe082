// The dry run of `check` and `freeze` (docs/engine.md, "The dry run"): each arm and the
// operation's reference called once on the protocol's smallest shape in the child that loads
// the outside arms (run/arm_check.cpp), outputs compared by the correctness gate. Internal to
// runner/run.
#pragma once

#include "base/json.hpp"
#include "device/device.hpp"
#include "spec/arm_code.hpp"
#include "spec/protocol.hpp"
#include "spec/records.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace prereg {

/// What `check` and `freeze` give the dry run: the built-in arms' code.
struct dry_run_request {
  arm_resolver resolve;
};

/// What the dry run did: the device kind it ran on ("" when it did not run, `not_run` saying
/// why), each call whose outputs matched the reference, and each arm not called here with why.
struct dry_run_report {
  std::string device;
  std::string not_run;
  std::vector<cell_key> calls;
  std::vector<std::pair<std::string, std::string>> not_called; ///< (arm id, why)
  /// The report as the loading child sends it up its pipe, and back (exit 1 if malformed).
  [[nodiscard]] json to_json() const;
  [[nodiscard]] static dry_run_report from_json(const json &j);
};

/// Runs the dry run of `p` in this process (the loading child, inside its sandbox, its outside
/// arms already loaded once): per arm and pass the smallest shape of the protocol the arm can
/// take here, on the protocol's device made by `make_device` (not at all when `no_device` says
/// it is unusable here), seeded as the run's gate is. An outside arm named in `not_loaded` (arm
/// id -> its loader's notice: the environment's) is not called, and said so. Throws exit 2,
/// one line naming the operation's reference or the arm, the cell, the tensor and the problem,
/// for the first failure (the reference's before any arm's).
[[nodiscard]] dry_run_report
dry_run_here(const protocol &p, const std::filesystem::path &protocol_dir,
             const std::function<std::unique_ptr<device>(const std::string &, int)> &make_device,
             const arm_resolver &resolve, const std::string &no_device,
             const std::map<std::string, std::string> &not_loaded = {});

/// The dry run's line for `check` and `freeze` ("dry run on cpu: ..."), and its notices (arms
/// not called, the run not done), each escaped for the terminal.
[[nodiscard]] std::string dry_run_line(const dry_run_report &r, const protocol &p);
[[nodiscard]] std::vector<std::string> dry_run_notices(const dry_run_report &r);

} // namespace prereg
