// The sandbox's steps, one file each (docs/engine.md, "The measuring process"): the mounts
// (sandbox_mounts.cpp), the lock (sandbox_lock.cpp: a nested user namespace, capabilities,
// no_new_privs, Landlock), the system-call filter (sandbox_seccomp.cpp) and the probes
// (sandbox_probe.cpp). Internal to sandbox.cpp and its tests.
#pragma once

#include "run/sandbox.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace prereg::detail {

/// "WHAT: strerror(errno)".
[[nodiscard]] std::string errno_text(const char *what);

/// The folders outside code may write: scratch and caches (Python, torch.compile, Triton, CUDA),
/// each created first where it is missing and the user may; only those that exist.
[[nodiscard]] std::vector<std::filesystem::path> scratch_folders();

/// Whether `p` lies inside `folder` (lexically, both absolute).
[[nodiscard]] bool path_inside(const std::filesystem::path &folder, const std::filesystem::path &p);

/// The folders masked over the key: the key's own folder and the default key folders, each
/// only where it does not hold something the process needs (sandbox_paths::must_stay_shown).
[[nodiscard]] std::vector<std::filesystem::path> key_folders(const sandbox_paths &paths);

/// In the new mount namespace: the whole tree read-only but the scratch folders, the store, the
/// reports folder and the project read-only on top, the key and its folders masked, each hidden
/// folder under an empty tmpfs. Appends the layers that went up to `facts` (their causes to its
/// reason otherwise).
void protect_files(const sandbox_paths &paths, isolation_facts &facts);

/// In the namespace's init, after its /proc is mounted: /proc/sys and the other kernel knobs
/// under /proc read-only (as bubblewrap does); false if one could not be.
bool protect_proc();

/// The lock, in the measuring process after its mounts are made (sandbox_lock.cpp), each step
/// appending its layer to `facts` or its cause to the reason: a nested user namespace, so that
/// the mount namespace belongs to a user namespace in which this process holds nothing
/// (`mounts-locked`); every capability and the bounding set dropped, securebits locked
/// (`caps-dropped`); no_new_privs (`no-new-privs`); Landlock over writes (`landlock`).
void lock_process(isolation_facts &facts);

/// Landlock: writes only below the scratch folders, to device files under /dev, and below this
/// process's own /proc/PID/task (its threads' names, which the CUDA driver writes); nothing else
/// under /proc. Returns "" when it stands, else why not ("unavailable (...)").
[[nodiscard]] std::string restrict_writes();

/// The descriptor restrict_writes() keeps open on /proc/self/task (its rule's inode), or -1.
[[nodiscard]] int own_threads_folder();

/// The system-call filter (libseccomp; sandbox_seccomp.cpp), installed last: "" when it stands,
/// else why not.
[[nodiscard]] std::string install_seccomp_filter();

/// What the probes need to know: the paths of the walls and the pids around the process.
struct probe_targets {
  const sandbox_paths *paths = nullptr;
  std::vector<int> own_fds;            ///< descriptors the process keeps besides 0, 1, 2
  int prereg_pid = 0;                  ///< the process that started the sandbox, as pid outside
  unsigned long long prereg_start = 0; ///< its start time (start_time_of), 0 if unknown
  bool landlock = false;               ///< whether Landlock went up (else write-proc is not tried)
};

/// The start time of `pid` as this process's /proc shows it (clock ticks after boot,
/// /proc/PID/stat field 22); 0 if unknown.
[[nodiscard]] unsigned long long start_time_of(int pid);

/// The probes of one stage, each run in a forked child of this process, which tries the escape
/// and reports; `stage` 1 runs before the system-call filter (the walls of the mounts, the
/// capabilities and Landlock on their own), 2 after it.
[[nodiscard]] std::vector<isolation_probe> run_probes(const probe_targets &t, int stage);

/// The layers whose probes all were contained, the others removed with their cause in the
/// reason: a layer is reported only once its probes failed to get past it.
void keep_proven_layers(isolation_facts &facts);

} // namespace prereg::detail
