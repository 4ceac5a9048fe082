// The sandbox's driver (sandbox.hpp): the walls go up in a fixed order, each a named step, as
// bubblewrap's do: namespaces, mounts (sandbox_mounts.cpp), a PID namespace with an init of
// its own, then in the isolated process the lock (sandbox_lock.cpp), the system-call filter
// (sandbox_seccomp.cpp) and the probes (sandbox_probe.cpp). A wall the system refuses is left
// out with its reason.
#include "run/sandbox.hpp"
#include "base/process.hpp"

#include "run/sandbox_detail.hpp"
#include "run/scratch.hpp"
#include "store/ledger.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace prereg::detail {
namespace fs = std::filesystem;
namespace {

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

/// New user and mount namespaces, the same uid and gid inside; mounts stop propagating out.
bool enter_user_and_mount(isolation_facts &facts) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  // A process forked after prereg made itself not dumpable (a second loader of `check`) is not
  // dumpable either, and then its /proc/self files belong to root: a user other than root could
  // not write its own uid_map. This process runs outside code next anyway.
  (void)::prctl(PR_SET_DUMPABLE, 1);
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    facts.add_reason(errno_text("user and mount namespaces are not available (unshare)"));
    return false;
  }
  if (!write_proc_file("/proc/self/setgroups", "deny") ||
      !write_proc_file("/proc/self/uid_map", fmt::format("{} {} 1\n", uid, uid)) ||
      !write_proc_file("/proc/self/gid_map", fmt::format("{} {} 1\n", gid, gid)) ||
      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    facts.add_reason(errno_text("the new user namespace could not be set up"));
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

/// Waits for the namespace's init and ends this process as the isolated process ended: the
/// init passes a signal on as exit status 128 + N (an init cannot kill itself with a signal),
/// and the isolated process itself only ever exits with 0, 1, 2 or 127.
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

/// The namespace's init (PID 1): reaps every orphan (torch.compile's workers, a daemon's
/// children) until the isolated process ends, then exits with its status (a signal N as
/// 128 + N). When the init ends, the kernel ends every process left in the namespace, and this
/// exit is seen by the waiting process outside only after they all have.
[[noreturn]] void init_until(pid_t isolated) {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR)
      continue;
    if (pid < 0)
      std::_Exit(1);
    if (pid != isolated)
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
/// forks the isolated process, which returns from this call as PID 2; this process and the
/// init only wait and pass its end on. False (the reason said) when it cannot be entered.
bool enter_pid_namespace(isolation_facts &facts, const std::vector<int> &keep) {
  if (::unshare(CLONE_NEWPID) != 0) {
    facts.add_reason(errno_text("a PID namespace is not available (unshare)"));
    return false;
  }
  if (!fork_off(keep, [](pid_t init) { end_as(init); })) {
    facts.add_reason(errno_text("the PID namespace's init could not be forked"));
    return false;
  }
  ::prctl(PR_SET_DUMPABLE, 0); // the init: its memory and environment out of the arms' reach
  facts.layers.emplace_back("pid-namespace");
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    facts.add_reason(errno_text("a /proc of the new PID namespace could not be mounted"));
  } else {
    facts.layers.emplace_back("fresh-proc");
    if (!protect_proc()) // a second wall: writes there need capabilities it will not have
      facts.add_reason(errno_text("/proc/sys could not be bound read-only"));
  }
  if (!fork_off(keep, [](pid_t isolated) { init_until(isolated); }))
    std::_Exit(1);             // the init cannot fork: the parent sees the pipe close and says so
  ::prctl(PR_SET_DUMPABLE, 1); // the isolated process's own /proc entries stay its own
  return true;
}

/// In the isolated process: the lock, stage 1 of the probes, the filter, stage 2; then only the
/// layers the probes proved.
void lock_and_probe(const sandbox_paths &paths, const std::vector<int> &keep, int prereg_pid,
                    unsigned long long prereg_start, isolation_facts &facts) {
  lock_process(facts);
  probe_targets t{&paths, keep, prereg_pid, prereg_start,
                  std::find(facts.layers.begin(), facts.layers.end(), "landlock") !=
                      facts.layers.end()};
  if (own_threads_folder() >= 0) // Landlock's own (an O_PATH folder: it reads and writes nothing)
    t.own_fds.push_back(own_threads_folder());
  facts.probes = run_probes(t, 1);
  if (const std::string why = install_seccomp_filter(); why.empty())
    facts.layers.emplace_back("seccomp");
  else
    facts.add_reason(why);
  for (auto &p : run_probes(t, 2))
    facts.probes.push_back(std::move(p));
  keep_proven_layers(facts);
}

} // namespace

std::vector<fs::path> sandbox_paths::read_only() const {
  std::vector<fs::path> out;
  for (const auto &p : {store, reports, project})
    if (!p.empty())
      out.push_back(p);
  return out;
}

void forget_key_variable() {
  if (char *v = std::getenv("PREREG_KEY"))
    std::memset(v, 0, std::strlen(v));
  ::unsetenv("PREREG_KEY");
}

void isolation_facts::add_reason(const std::string &why) {
  reason += (reason.empty() ? "" : "; ") + why;
}

json isolation_facts::to_json() const {
  json probe_list = json::array();
  for (const auto &p : probes)
    probe_list.push_back(
        {{"name", p.name}, {"outcome", p.outcome}, {"error", p.error}, {"detail", p.detail}});
  return {{"layers", layers}, {"reason", reason}, {"probes", probe_list}};
}

sandbox_paths sandbox_paths_for(const fs::path &key, const fs::path &store,
                                const fs::path &reports) {
  std::error_code ec;
  sandbox_paths p;
  p.key = fs::absolute(key, ec).lexically_normal();
  p.store = fs::absolute(store, ec).lexically_normal();
  if (!reports.empty())
    p.reports = fs::absolute(reports, ec).lexically_normal();
  p.project = p.store.parent_path();
  if (const fs::path cache = verified_cache_folder(); !cache.empty()) {
    // Made here, outside the sandbox, where missing (0700, as the cache makes it): a folder the
    // sandbox made would lie in its scratch space when the cache lies under /tmp.
    if (!fs::exists(fs::symlink_status(cache, ec)) && fs::create_directories(cache, ec))
      fs::permissions(cache, fs::perms::owner_all, ec);
    p.hidden.push_back(cache);
  }
  p.must_stay_shown = p.read_only();
  p.must_stay_shown.push_back(fs::current_path(ec));
  return p;
}

isolation_facts enter_sandbox(const sandbox_paths &paths, std::vector<int> keep, int prereg_pid) {
  isolation_facts facts;
  const unsigned long long prereg_start = start_time_of(prereg_pid);
  close_inherited(keep);
  facts.layers.emplace_back("no-inherited-fds");
  if (!enter_user_and_mount(facts)) {
    // No namespaces: what needs none (no_new_privs, the filter, Landlock) still stands, and the
    // probes still say what holds; the level is `none` (no user namespace).
    lock_and_probe(paths, keep, prereg_pid, prereg_start, facts);
    return facts;
  }
  facts.layers.emplace_back("user-namespace");
  facts.layers.emplace_back("mount-namespace");
  (void)bound_scratch(scratch_folders()); // scratch.hpp: before the folders are bound below
  protect_files(paths, facts);
  (void)enter_pid_namespace(facts, keep); // without one, the reason says so and the rest holds
  lock_and_probe(paths, keep, prereg_pid, prereg_start, facts);
  return facts;
}

} // namespace prereg::detail
