// The walls around every process that runs outside code (docs/engine.md, "The measuring
// process"): the measuring process of `run` and `try`, and the processes that load arms and
// operation files at `check`, `canon` and `freeze`. Linux user, mount and PID namespaces in
// which the file system is read-only except a few scratch folders, the signing key, its folder
// and prereg's own caches are masked, the store and the reports folder are read-only; then, as
// bubblewrap does, a nested user namespace locks the mounts, every capability is dropped,
// no_new_privs is set, Landlock and a seccomp filter go up, and probes try each escape.
// Internal to runner/run.
#pragma once

#include "base/json.hpp"
#include "base/json_reader.hpp"
#include "model/report_model.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace prereg::detail {

/// What the sandbox hides and protects.
struct sandbox_paths {
  std::filesystem::path key;     ///< the signing key file: masked
  std::filesystem::path store;   ///< read-only, a scratch folder inside it too
  std::filesystem::path reports; ///< read-only, a scratch folder inside it too ("" when none)
  std::filesystem::path project; ///< read-only; a scratch folder inside it stays writable
  /// Folders under an empty tmpfs, created first where missing: prereg's own caches, which the
  /// key-holding parent reads (the verified-prefix cache).
  std::vector<std::filesystem::path> hidden;
  std::vector<std::filesystem::path> must_stay_shown; ///< folders a masked key folder must not hide

  /// The store and the reports folder, then the project: the read-only binds, in that order.
  [[nodiscard]] std::vector<std::filesystem::path> read_only() const;
};

/// The walls that stand, in the order they went up, why any the design has is missing, and the
/// probes' results. Goes into the report as run.isolation (docs/report.md).
struct isolation_facts {
  std::vector<std::string> layers;
  std::string reason; ///< each missing layer's cause, "; "-separated; "" when all stand
  std::vector<isolation_probe> probes;
  /// Appends `why` to the reason.
  void add_reason(const std::string &why);
  /// {layers, reason, probes: [{name, outcome, error, detail}]}: the channel's message.
  [[nodiscard]] json to_json() const;
};

/// The sandbox paths of a command that uses the key `key` (empty: none), the store `store`
/// and the reports folder `reports` (empty: none): the project is the store's folder, the
/// current folder must stay shown, and the verified-prefix cache is hidden.
[[nodiscard]] sandbox_paths sandbox_paths_for(const std::filesystem::path &key,
                                              const std::filesystem::path &store,
                                              const std::filesystem::path &reports);

/// In a forked process, before any outside code runs: closes every inherited descriptor but 0,
/// 1, 2 and `keep`, enters new user and mount namespaces, masks and write-protects `paths`,
/// then enters a new PID namespace: this process stays outside it and only waits, ending as the
/// isolated process ends (the same exit status or signal); the namespace's init (PID 1) mounts
/// a fresh /proc, reaps orphans and forks the isolated process, which locks itself in (a nested
/// user namespace, no capability, no_new_privs, Landlock, the seccomp filter), runs the probes
/// and returns from this call as PID 2. `prereg_pid` is the process that forked this one. A
/// wall that cannot go up, or whose probe got past it, is left out and said in the reason; the
/// caller goes on without it. Everything left in the namespace ends when the isolated process
/// does.
[[nodiscard]] isolation_facts enter_sandbox(const sandbox_paths &paths, std::vector<int> keep,
                                            int prereg_pid);

/// On the CPU device, after prereg's own crash handlers and before outside code runs: a second
/// seccomp filter refuses to install a handler for SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE and
/// SIGSYS (EPERM), so that outside code cannot take pages away in a timed window and compute
/// its outputs in a handler when prereg first touches them after it (docs/engine.md, "The
/// sandbox"). "" when it stands, else why not.
[[nodiscard]] std::string ban_fault_handlers();

/// The isolation message read strictly (each layer and probe one the report knows, each probe
/// outcome one of contained, escaped, not-tried); a fault fails through `n`'s.
[[nodiscard]] report_isolation read_isolation_message(const json_node &n);

/// What the parent adds to the message: `parent-not-dumpable` when its own PR_SET_DUMPABLE 0
/// held (and the sandbox stood at least one wall), then the level the layers and probes give.
void finish_isolation(report_isolation &i, bool parent_not_dumpable);

/// PREREG_KEY's value zeroed in this process's environment block (which /proc shows) and the
/// variable removed.
void forget_key_variable();

} // namespace prereg::detail
