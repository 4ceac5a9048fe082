// Loading a protocol's outside arms on this machine before anything is stored (`prereg check`,
// `prereg freeze`; docs/python-arms.md, "Loading"): in a child process that holds no key,
// sandboxed as a run's measuring process is.
#pragma once

#include "device/device.hpp"
#include "model/report_model.hpp"
#include "run/dry_run.hpp"
#include "spec/protocol.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace prereg {

/// What loading one outside arm here found.
struct arm_load_report {
  std::string arm;    ///< the arm id
  std::string loaded; ///< a Python arm: "Python 3.11.2 at ... (...)", the interpreter it used
  std::string notice; ///< why it could not be loaded here (the environment's), else ""
};

/// What load_arms_here found: one report per outside arm, in protocol order, a notice for the
/// protocol's device when it is unusable here ("" otherwise, or with no outside arm), and the
/// walls the loading process stood in (none without an outside arm).
struct arm_load_result {
  std::vector<arm_load_report> arms;
  std::string device_notice;
  std::optional<report_isolation> isolation;
  dry_run_report dry_run; ///< with a dry run asked for: what it did (run/dry_run.hpp)
};

/// What the sandbox of a process that loads outside code before anything is stored protects
/// (docs/engine.md, "The measuring process"): the key the command would use (its --key, else
/// PREREG_KEY, else the default) and the store (the project is its folder).
struct loading_paths {
  std::filesystem::path key;
  std::filesystem::path store;
};

using device_factory = std::function<std::unique_ptr<device>(const std::string &kind, int ordinal)>;

/// Loads every outside arm of `p`, its file resolved against `protocol_dir`, in a forked child
/// sandboxed as the measuring process is (the walls protecting `walls`):
/// a plugin's table read and checked, a Python file imported and its function looked up. For
/// a protocol whose device is not `cpu`, the child first makes that device with `make_device`;
/// when it cannot (exit 5), the device notice says why and a Python arm's import failures
/// raised outside its own code count as the environment's. Throws the first arm whose own
/// code fails (exit 2, its one line: missing file, function or symbol, a file that does not
/// import); a failure of the environment is that arm's notice instead. With `dry` (check and
/// freeze), the same child then runs the dry run (run/dry_run.hpp) and throws its failure.
[[nodiscard]] arm_load_result load_arms_here(const protocol &p,
                                             const std::filesystem::path &protocol_dir,
                                             const device_factory &make_device,
                                             const loading_paths &walls,
                                             const dry_run_request *dry = nullptr);

} // namespace prereg
