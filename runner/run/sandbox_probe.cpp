// The probes (sandbox_detail.hpp; docs/engine.md, "The measuring process"): before any outside
// code is loaded, a child of the isolated process tries each escape the walls are there to
// stop and reports what came back. A layer is reported only once its probes failed to get
// past it: "prove, don't configure".
#include "run/sandbox_detail.hpp"

#include "base/process.hpp"
#include "model/report_model.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

namespace prereg::detail {
namespace fs = std::filesystem;
namespace {

/// The errno's name ("EPERM"), or its number.
std::string errno_name(int e) {
  const char *n = ::strerrorname_np(e);
  return n != nullptr ? n : std::to_string(e);
}

isolation_probe contained(const char *name, int e, std::string detail) {
  return {name, "contained", errno_name(e), std::move(detail)};
}
isolation_probe escaped(const char *name, std::string detail) {
  return {name, "escaped", "", std::move(detail)};
}
isolation_probe not_tried(const char *name, std::string detail) {
  return {name, "not-tried", "", std::move(detail)};
}

/// A result from a system call's return: contained when it failed (its errno), else escaped.
isolation_probe by_return(const char *name, long r, int e, const std::string &what) {
  return r < 0 ? contained(name, e, what + " was refused") : escaped(name, what + " succeeded");
}

/// The descriptors this process holds besides 0, 1, 2 and `own`.
isolation_probe inherited_fds(const std::vector<int> &own) {
  DIR *d = ::opendir("/proc/self/fd");
  if (d == nullptr)
    return not_tried("inherited-fds", errno_text("/proc/self/fd cannot be listed"));
  std::vector<int> extra;
  for (dirent *e; (e = ::readdir(d)) != nullptr;) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    const int fd = std::atoi(e->d_name);
    if (fd > 2 && fd != ::dirfd(d) && std::find(own.begin(), own.end(), fd) == own.end())
      extra.push_back(fd);
  }
  ::closedir(d);
  if (!extra.empty())
    return escaped("inherited-fds",
                   fmt::format("descriptors {} were inherited", fmt::join(extra, ", ")));
  return {"inherited-fds", "contained", "", "only 0, 1, 2 and the channel's descriptors are open"};
}

/// The key's bytes: contained when the file cannot be opened or reads empty (the mask).
isolation_probe read_key(const fs::path &key) {
  const int fd = ::open(key.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return contained("read-key", errno, "opening the key file was refused");
  char buf[64];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  const int e = errno;
  ::close(fd);
  if (n < 0)
    return contained("read-key", e, "reading the key file was refused");
  if (n == 0)
    return {"read-key", "contained", "", "the key file reads empty (masked)"};
  return escaped("read-key", fmt::format("{} bytes of the key file were read", n));
}

/// Whether a new file can be made in `folder` (the nearest existing one of it): contained when
/// the creation is refused; a file made is removed at once.
isolation_probe write_into(const char *name, fs::path folder, const char *what) {
  std::error_code ec;
  while (!folder.empty() && folder != folder.root_path() && !fs::is_directory(folder, ec))
    folder = folder.parent_path();
  std::random_device rd;
  const fs::path file = folder / fmt::format(".prereg-probe-{}-{:08x}", ::getpid(), rd());
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return contained(name, errno, fmt::format("making a file in {} was refused", what));
  ::close(fd);
  ::unlink(file.c_str());
  return escaped(name, fmt::format("a file was made in {}", what));
}

/// A folder the user may write that is neither scratch nor a protected one: the home folder
/// when it is such, else "/".
fs::path outside_folder(const sandbox_paths &p) {
  std::error_code ec;
  const char *home = std::getenv("HOME");
  if (home == nullptr || *home != '/' || !fs::is_directory(home, ec))
    return "/";
  const fs::path h = fs::weakly_canonical(home, ec);
  const auto under = [&](const fs::path &f) { return f == h || path_inside(f, h); };
  const auto scratch = scratch_folders();
  const auto protected_ = p.read_only();
  if (std::any_of(scratch.begin(), scratch.end(), under) ||
      std::any_of(protected_.begin(), protected_.end(), under))
    return "/";
  return h;
}

/// umount2 on the key file and on each masked key folder.
isolation_probe unmount_mask(const sandbox_paths &p) {
  std::vector<fs::path> targets = {p.key};
  for (const auto &f : key_folders(p))
    targets.push_back(f);
  for (const auto &t : targets)
    if (::umount2(t.c_str(), MNT_DETACH) == 0)
      return escaped("unmount-key-mask", "a mask over the key was unmounted");
  return contained("unmount-key-mask", errno, "unmounting the masks over the key was refused");
}

/// Clearing read-only on the root mount: mount_setattr, then a bind remount without MS_RDONLY.
isolation_probe clear_read_only() {
  struct {
    std::uint64_t set = 0, clear = 0x1, propagation = 0, userns_fd = 0;
  } attr;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, "/", 0x8000u, &attr, sizeof attr) == 0)
    return escaped("clear-read-only", "read-only was cleared on / (mount_setattr)");
  if (::mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND, nullptr) == 0)
    return escaped("clear-read-only", "/ was remounted writable");
  return contained("clear-read-only", errno, "clearing read-only on / was refused");
}

/// Every capability set of this process, read as the kernel shows it.
isolation_probe capabilities() {
  std::ifstream status("/proc/self/status");
  std::vector<std::string> held;
  int seen = 0;
  for (std::string line; std::getline(status, line);)
    for (const char *set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
      if (line.rfind(std::string(set) + ":", 0) == 0) {
        ++seen;
        const std::string v = line.substr(line.find(':') + 1);
        if (std::strtoull(v.c_str(), nullptr, 16) != 0)
          held.push_back(fmt::format("{} {}", set, v.substr(v.find_first_not_of(" \t"))));
      }
  if (seen != 5)
    return not_tried("capabilities", "/proc/self/status does not show the capability sets");
  if (!held.empty())
    return escaped("capabilities", fmt::format("capabilities are held: {}", fmt::join(held, ", ")));
  return {"capabilities", "contained", "", "every capability set is empty"};
}

isolation_probe no_new_privs() {
  return ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1
             ? isolation_probe{"no-new-privs", "contained", "", "no_new_privs is set"}
             : escaped("no-new-privs", "no_new_privs is not set: an exec could gain privileges");
}

/// Opening /proc/self/comm for writing: writable by the mounts, refused by Landlock alone.
isolation_probe write_proc(bool landlock) {
  if (!landlock)
    return not_tried("write-proc", "Landlock is not up");
  const int fd = ::open("/proc/self/comm", O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return contained("write-proc", errno, "opening /proc/self/comm for writing was refused");
  ::close(fd);
  return escaped("write-proc", "/proc/self/comm was opened for writing");
}

/// The first stage: the walls of the mounts, the capabilities and Landlock, on their own.
std::vector<isolation_probe> stage_walls(const probe_targets &t) {
  const sandbox_paths &p = *t.paths;
  std::vector<isolation_probe> out;
  out.push_back(inherited_fds(t.own_fds));
  out.push_back(read_key(p.key));
  for (const auto &h : p.hidden)
    out.push_back(write_into("write-ledger-cache", h, "the verified-prefix cache's folder"));
  out.push_back(write_into("write-store", p.store, "the store"));
  if (!p.reports.empty())
    out.push_back(write_into("write-reports", p.reports, "the reports folder"));
  out.push_back(write_into("write-project", p.project, "the project"));
  out.push_back(write_into("write-home", outside_folder(p), "a folder outside the scratch ones"));
  out.push_back(unmount_mask(p));
  out.push_back(clear_read_only());
  out.push_back(capabilities());
  out.push_back(no_new_privs());
  out.push_back(write_proc(t.landlock));
  return out;
}

/// prereg itself (outside the PID namespace): signalled (kill 0) or found in /proc. A process
/// of the namespace that happens to have prereg's pid is told apart by its start time.
isolation_probe reach_prereg(const probe_targets &t, bool by_signal) {
  const char *name = by_signal ? "signal-prereg" : "proc-prereg";
  if (t.prereg_pid <= 0)
    return not_tried(name, "prereg's pid is not known");
  const std::string stat = fmt::format("/proc/{}/stat", t.prereg_pid);
  long r = 0;
  if (by_signal) {
    r = ::kill(t.prereg_pid, 0);
  } else {
    r = ::open(stat.c_str(), O_RDONLY | O_CLOEXEC);
    if (r >= 0)
      ::close(static_cast<int>(r));
  }
  const int e = errno;
  const std::string what = by_signal ? fmt::format("kill({}, 0) of prereg", t.prereg_pid)
                                     : fmt::format("opening prereg's {}", stat);
  if (r < 0)
    return contained(name, e, what + " was refused");
  if (t.prereg_start != 0 && start_time_of(t.prereg_pid) != t.prereg_start)
    return {name, "contained", "",
            fmt::format("pid {} here is a process of the namespace, not prereg", t.prereg_pid)};
  return escaped(name, what + " succeeded");
}

/// The second stage, behind the system-call filter: other processes and new namespaces.
std::vector<isolation_probe> stage_filter(const probe_targets &t) {
  std::vector<isolation_probe> out;
  const pid_t parent = ::getppid(); // the isolated process this probe was forked from
  const long r = ::syscall(SYS_unshare, CLONE_NEWUSER);
  out.push_back(by_return("new-user-namespace", r, errno, "entering a new user namespace"));
  long v = 0;
  iovec local{&v, sizeof v}, remote{&v, sizeof v}; // the same address holds the same in the parent
  const long read = ::syscall(SYS_process_vm_readv, parent, &local, 1, &remote, 1, 0);
  out.push_back(by_return("read-parent-memory", read, errno, "process_vm_readv of its parent"));
  const auto seize = [](pid_t pid) {
    const long s = ::syscall(SYS_ptrace, 0x4206 /* PTRACE_SEIZE */, pid, 0, 0);
    const int e = errno;
    if (s == 0)
      ::syscall(SYS_ptrace, 17 /* PTRACE_DETACH */, pid, 0, 0);
    errno = e;
    return s;
  };
  long s = seize(parent);
  out.push_back(by_return("ptrace-parent", s, errno, "PTRACE_SEIZE of its parent"));
  s = seize(1);
  out.push_back(by_return("ptrace-init", s, errno, "PTRACE_SEIZE of the namespace's init"));
  s = ::kill(parent, 0);
  out.push_back(by_return("signal-parent", s, errno, "kill(parent, 0)"));
  s = ::kill(1, 0);
  out.push_back(by_return("signal-init", s, errno, "kill(1, 0)"));
  out.push_back(reach_prereg(t, true));
  out.push_back(reach_prereg(t, false));
  return out;
}

} // namespace

std::vector<isolation_probe> run_probes(const probe_targets &t, int stage) {
  pipe_ends up = open_pipe(on_exec::close);
  const pid_t pid = ::fork();
  if (pid < 0)
    return {}; // no probe ran: every layer they test stays unproven
  if (pid == 0) {
    up.read.reset();
    probe_targets mine = t;
    mine.own_fds.push_back(up.write.get());
    json out = json::array();
    for (const auto &p : stage == 1 ? stage_walls(mine) : stage_filter(mine))
      out.push_back(
          {{"name", p.name}, {"outcome", p.outcome}, {"error", p.error}, {"detail", p.detail}});
    (void)write_all(up.write.get(), out.dump());
    std::_Exit(0);
  }
  up.write.reset();
  const std::string text = read_all(up.read.get());
  (void)wait_for(pid);
  std::vector<isolation_probe> out;
  try {
    for (const auto &p : json::parse(text))
      out.push_back({p.at("name"), p.at("outcome"), p.at("error"), p.at("detail")});
  } catch (const std::exception &) {
    out.clear(); // a probe that died sent nothing usable: its layers stay unproven
  }
  return out;
}

void keep_proven_layers(isolation_facts &facts) {
  std::vector<std::string> kept;
  for (const auto &layer : facts.layers) {
    std::vector<std::string> escapes;
    bool tested = false, proven = false;
    for (const auto &p : facts.probes) {
      if (probe_layer(p.name) != layer)
        continue;
      tested = true;
      proven = proven || p.outcome == "contained";
      if (p.outcome == "escaped")
        escapes.push_back(fmt::format("{} ({})", p.name, p.detail));
    }
    if (!escapes.empty())
      facts.add_reason(
          fmt::format("{}: its probe got past it: {}", layer, fmt::join(escapes, "; ")));
    else if (tested && !proven)
      facts.add_reason(fmt::format("{}: no probe of it could be tried", layer));
    else
      kept.push_back(layer);
  }
  facts.layers = std::move(kept);
}

unsigned long long start_time_of(int pid) {
  const int fd = ::open(fmt::format("/proc/{}/stat", pid).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0)
    return 0;
  const std::string text(buf, static_cast<std::size_t>(n));
  const auto paren = text.rfind(')');
  if (paren == std::string::npos)
    return 0;
  std::size_t at = paren + 2; // field 3
  for (int field = 3; field < 22; ++field) {
    at = text.find(' ', at);
    if (at == std::string::npos)
      return 0;
    ++at;
  }
  return std::strtoull(text.c_str() + at, nullptr, 10);
}

} // namespace prereg::detail
