// The measuring process's walls (sandbox.hpp): each a plain Linux mechanism, put up in order,
// each skipped with its reason where the system refuses it.
#include "run/sandbox.hpp"

#include "run/scratch.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace prereg::detail {
namespace fs = std::filesystem;
namespace {

// mount_setattr(2) (Linux 5.12), called directly: its declaration is not in every libc.
struct attr_args {
  std::uint64_t set = 0, clear = 0, propagation = 0, userns_fd = 0;
};
constexpr std::uint64_t attr_read_only = 0x1;
constexpr unsigned at_recursive = 0x8000;

int set_read_only(const fs::path &p, bool read_only, bool recursive) {
  attr_args a;
  (read_only ? a.set : a.clear) = attr_read_only;
  return static_cast<int>(::syscall(SYS_mount_setattr, AT_FDCWD, p.c_str(),
                                    recursive ? at_recursive : 0u, &a, sizeof a));
}

std::string errno_text(const char *what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

/// Closes every descriptor but 0, 1, 2 and `keep`: nothing the parent opened (the store's lock,
/// a ledger, a report being read) stays reachable.
void close_inherited(std::vector<int> keep) {
  keep.insert(keep.end(), {0, 1, 2});
  std::sort(keep.begin(), keep.end());
  unsigned from = 0;
  for (const int fd : keep) {
    if (static_cast<unsigned>(fd) > from)
      ::syscall(SYS_close_range, from, static_cast<unsigned>(fd) - 1, 0u);
    from = static_cast<unsigned>(fd) + 1;
  }
  ::syscall(SYS_close_range, from, ~0u, 0u);
}

bool write_text(const char *path, const std::string &text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

/// New user and mount namespaces, the same uid and gid inside; mounts stop propagating out.
bool enter_user_and_mount(std::string &reason) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    reason = errno_text("user and mount namespaces are not available (unshare)");
    return false;
  }
  if (!write_text("/proc/self/setgroups", "deny") ||
      !write_text("/proc/self/uid_map", fmt::format("{} {} 1\n", uid, uid)) ||
      !write_text("/proc/self/gid_map", fmt::format("{} {} 1\n", gid, gid)) ||
      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    reason = errno_text("the new user namespace could not be set up");
    return false;
  }
  return true;
}

/// The folders outside code may write: scratch and caches (Python, torch.compile, Triton, CUDA).
std::vector<fs::path> scratch_folders() {
  std::vector<fs::path> out = {"/tmp", "/var/tmp", "/dev/shm"};
  std::error_code ec;
  // A cache folder the tools would create on first use is created now, where the user may
  // (Triton makes ~/.triton on its first compile: under a read-only home it could not).
  const auto cache = [&](fs::path p) {
    fs::create_directories(p, ec);
    out.push_back(std::move(p));
  };
  for (const char *var : {"TMPDIR", "XDG_CACHE_HOME", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR",
                          "CUDA_CACHE_PATH"})
    if (const char *v = std::getenv(var); v != nullptr && *v == '/')
      cache(v);
  if (const char *home = std::getenv("HOME"); home != nullptr && *home == '/')
    for (const char *sub : {".cache", ".triton", ".nv"})
      cache(fs::path(home) / sub);
  std::erase_if(out, [&](const fs::path &p) { return !fs::is_directory(p, ec); });
  return out;
}

/// Everything read-only but the scratch folders, which are bound onto themselves first so that
/// they can be made writable again on their own.
bool read_only_root(std::string &reason) {
  const auto scratch = scratch_folders();
  for (const auto &p : scratch)
    if (::mount(p.c_str(), p.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      reason = errno_text("a scratch folder could not be bound");
      return false;
    }
  if (set_read_only("/", true, true) != 0) {
    reason = errno_text("the file system could not be made read-only (mount_setattr)");
    return false;
  }
  for (const auto &p : scratch)
    (void)set_read_only(p, false, false);
  return true;
}

/// A read-only bind of `p` onto itself, with the mount's locked flags kept (the fallback of
/// kernels without mount_setattr).
bool bind_read_only(const fs::path &p) {
  struct statvfs sv {};
  if (::mount(p.c_str(), p.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
      ::statvfs(p.c_str(), &sv) != 0)
    return false;
  if (set_read_only(p, true, true) == 0)
    return true;
  unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
  for (const auto &[st, ms] : {std::pair{ST_NOSUID, MS_NOSUID},
                               {ST_NODEV, MS_NODEV},
                               {ST_NOEXEC, MS_NOEXEC},
                               {ST_NOATIME, MS_NOATIME},
                               {ST_NODIRATIME, MS_NODIRATIME},
                               {ST_RELATIME, MS_RELATIME}})
    if ((sv.f_flag & st) != 0)
      flags |= ms;
  return ::mount(nullptr, p.c_str(), nullptr, flags, nullptr) == 0;
}

bool contains(const fs::path &folder, const fs::path &p) {
  const auto rel = p.lexically_relative(folder);
  return !rel.empty() && *rel.begin() != "..";
}

/// An empty, read-only tmpfs over `folder`.
bool mask_folder(const fs::path &folder) {
  return ::mount("prereg-masked", folder.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                 "size=4k,mode=000") == 0;
}

/// The key file under /dev/null, and its folder (and the default key folders,
/// ~/.config/prereg and $XDG_CONFIG_HOME/prereg) under an empty tmpfs unless that folder holds
/// something the measuring process needs.
bool mask_key(const sandbox_paths &paths, std::string &reason) {
  std::error_code ec;
  std::vector<fs::path> folders;
  const fs::path key = fs::weakly_canonical(paths.key, ec);
  folders.push_back(key.parent_path());
  if (const char *home = std::getenv("HOME"); home != nullptr && *home == '/')
    folders.push_back(fs::weakly_canonical(fs::path(home) / ".config" / "prereg", ec));
  if (const char *config = std::getenv("XDG_CONFIG_HOME"); config != nullptr && *config == '/')
    folders.push_back(fs::weakly_canonical(fs::path(config) / "prereg", ec));
  for (const auto &f : folders) {
    const bool needed = std::any_of(paths.must_stay_shown.begin(), paths.must_stay_shown.end(),
                                    [&](const fs::path &m) {
                                      const fs::path c = fs::weakly_canonical(m, ec);
                                      return c == f || contains(f, c);
                                    });
    if (!needed && fs::is_directory(f, ec) && !mask_folder(f)) {
      reason = errno_text("the key's folder could not be masked");
      return false;
    }
  }
  if (fs::exists(key, ec) && ::mount("/dev/null", key.c_str(), nullptr, MS_BIND, nullptr) != 0 &&
      fs::exists(key, ec)) { // exists still: the folder's mask did not already hide it
    reason = errno_text("the key file could not be masked");
    return false;
  }
  return true;
}

/// The status `child` ended with (waiting through EINTR).
int wait_status_of(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

/// Waits for the namespace's init and ends this process as the measuring process ended: the
/// init passes a signal on as exit status 128 + N (an init cannot kill itself with a signal),
/// and the measuring process itself only ever exits with 0, 1 or 127.
[[noreturn]] void end_as(pid_t init) {
  const int status = wait_status_of(init);
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) > 128)
    sig = WEXITSTATUS(status) - 128;
  if (sig != 0) {
    ::signal(sig, SIG_DFL);
    sigset_t set;
    ::sigemptyset(&set);
    ::sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
  }
  std::_Exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/// The namespace's init (PID 1): reaps every orphan (torch.compile's workers) until the
/// measuring process ends, then exits with its status (a signal N as 128 + N). When the init
/// ends, the kernel ends every process left in the namespace.
[[noreturn]] void init_until(pid_t measuring) {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR)
      continue;
    if (pid < 0)
      std::_Exit(1);
    if (pid != measuring)
      continue;
    if (WIFSIGNALED(status))
      std::_Exit(128 + WTERMSIG(status));
    std::_Exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  }
}

/// Forks; the parent closes its copies of `keep` and runs `then` with the child's pid.
template <class F> bool fork_off(const std::vector<int> &keep, F &&then) {
  const pid_t child = ::fork();
  if (child < 0)
    return false;
  if (child > 0) {
    for (const int fd : keep)
      ::close(fd);
    then(child);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL); // dies with the process that waits for it
  return true;
}

/// A new PID namespace: its init (a child of this call) mounts the namespace's /proc and
/// forks the measuring process, which returns from this call as PID 2; this process and the
/// init only wait and pass its end on.
void enter_pid_namespace(isolation_facts &facts, const std::vector<int> &keep) {
  if (::unshare(CLONE_NEWPID) != 0) {
    facts.reason = errno_text("a PID namespace is not available (unshare)");
    return;
  }
  if (!fork_off(keep, [](pid_t init) { end_as(init); })) {
    facts.reason = errno_text("the PID namespace's init could not be forked");
    return;
  }
  ::prctl(PR_SET_DUMPABLE, 0); // the init: its memory and environment out of the arms' reach
  facts.layers.emplace_back("pid-namespace");
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    facts.reason = errno_text("a /proc of the new PID namespace could not be mounted");
  else
    facts.layers.emplace_back("fresh-proc");
  if (!fork_off(keep, [](pid_t measuring) { init_until(measuring); }))
    std::_Exit(1);             // the init cannot fork: the parent sees the pipe close and says so
  ::prctl(PR_SET_DUMPABLE, 1); // the measuring process's own /proc entries stay its own
}

/// The masks and the read-only store in the new mount namespace.
void protect_files(const sandbox_paths &paths, isolation_facts &facts) {
  std::string why;
  if (read_only_root(why))
    facts.layers.emplace_back("read-only-root");
  else
    facts.reason = why;
  bool store_ok = true;
  std::error_code ec;
  for (const auto &p : paths.read_only)
    if (fs::is_directory(p, ec) && !bind_read_only(p))
      store_ok = false;
  // A scratch folder inside the project (not the store or the reports) is writable again: only
  // its own mount, so that the read-only binds below it (a store under /tmp) stay read-only.
  for (const auto &s : scratch_folders())
    if (std::none_of(paths.read_only.begin(), paths.read_only.begin() + paths.sealed,
                     [&](const fs::path &p) { return p == s || contains(p, s); }))
      (void)set_read_only(s, false, false);
  if (store_ok)
    facts.layers.emplace_back("read-only-store");
  else if (facts.reason.empty())
    facts.reason = errno_text("the store or the reports folder could not be made read-only");
  if (mask_key(paths, why))
    facts.layers.emplace_back("key-masked");
  else if (facts.reason.empty())
    facts.reason = why;
}

} // namespace

json isolation_facts::to_json() const { return {{"layers", layers}, {"reason", reason}}; }

isolation_facts enter_sandbox(const sandbox_paths &paths, std::vector<int> keep) {
  isolation_facts facts;
  close_inherited(keep);
  facts.layers.emplace_back("no-inherited-fds");
  if (!enter_user_and_mount(facts.reason))
    return facts;
  facts.layers.emplace_back("user-namespace");
  facts.layers.emplace_back("mount-namespace");
  (void)bound_scratch(scratch_folders()); // scratch.hpp: before the folders are bound below
  protect_files(paths, facts);
  enter_pid_namespace(facts, keep);
  return facts;
}

} // namespace prereg::detail
