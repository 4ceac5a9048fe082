// Running a few system commands (a C compiler) in the measuring process's sandbox
// (docs/grading.md, "C source"): the same walls as a run's measuring process (user, mount and
// PID namespaces, the root, the store and the reports read-only, the key masked, every
// capability dropped, no_new_privs, Landlock over writes, the seccomp filter), the commands
// writing only in the sandbox's private scratch; the files they made come back over a pipe.
#pragma once

#include "base/json.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace prereg {

/// One command run in the sandbox: execv(argv[0], argv), its stderr to `stderr_file` (a path in
/// the scratch) when set, else the caller's. A scratch file is named under /tmp; where the
/// sandbox cannot cover /tmp (it is read-only there then: run/scratch.hpp) it is made in the
/// first folder the scratch space covers instead: every argument and stderr file equal to a
/// path of `fetch` is moved there, and the file still comes back under its /tmp name.
struct sandbox_command {
  std::vector<std::string> argv;
  std::filesystem::path stderr_file;
};

/// What the sandbox protects and what comes back.
struct sandbox_commands_request {
  std::vector<sandbox_command> commands;    ///< run in turn, stopping at the first that fails
  std::vector<std::filesystem::path> fetch; ///< files (in the scratch) sent back afterwards
  std::filesystem::path key;                ///< the signing key: masked
  std::filesystem::path store;              ///< read-only (its folder is the project)
};

/// In a forked child (the caller's process is replaced by the sandbox's): enters the sandbox,
/// runs the commands, then writes to `fd` one JSON line {"isolation": {layers, reason, probes},
/// "status": the last command's exit status (128 + N for signal N, 127 when it could not
/// start)}, then per file of `fetch` that exists a JSON line {"file", "bytes"} and its bytes.
/// Ends the process with that status. `prereg_pid`: the process that forked this one.
[[noreturn]] void run_commands_in_sandbox(const sandbox_commands_request &r, int fd,
                                          int prereg_pid);

/// The message run_commands_in_sandbox wrote, read back: its first line's JSON (null when it
/// sent none) and the files by path.
struct sandbox_commands_result {
  json head = nullptr;
  std::vector<std::pair<std::string, std::string>> files;
};
[[nodiscard]] sandbox_commands_result read_sandbox_commands(const std::string &message);

} // namespace prereg
