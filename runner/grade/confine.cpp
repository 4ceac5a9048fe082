// One submission's walls (confine.hpp): user and mount namespaces, private scratch folders and
// caches, the other submissions' files hidden; then exec.
#include "grade/confine.hpp"

#include "base/process.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

namespace prereg::grade {
namespace fs = std::filesystem;
namespace {

std::string errno_text(const std::string &what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

bool inside(const fs::path &folder, const fs::path &p) {
  const auto rel = p.lexically_relative(folder);
  return !rel.empty() && *rel.begin() != ".." && rel != ".";
}

fs::path canonical_or_same(const fs::path &p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? p : c;
}

/// The scratch folders and caches that become private: those that exist, parents first.
std::vector<fs::path> scratch_folders() {
  std::vector<fs::path> out = {"/tmp", "/var/tmp", "/dev/shm"};
  for (const char *var : {"TMPDIR", "XDG_CACHE_HOME", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR",
                          "CUDA_CACHE_PATH"})
    if (const char *v = std::getenv(var); v != nullptr && *v == '/')
      out.emplace_back(v);
  if (const char *home = std::getenv("HOME"); home != nullptr && *home == '/')
    for (const char *sub : {".cache", ".triton", ".nv"})
      out.push_back(fs::path(home) / sub);
  std::error_code ec;
  std::vector<fs::path> existing;
  for (const auto &p : out)
    if (fs::is_directory(p, ec))
      existing.push_back(canonical_or_same(p));
  std::sort(existing.begin(), existing.end());
  existing.erase(std::unique(existing.begin(), existing.end()), existing.end());
  return existing; // sorted: a parent comes before what lies below it
}

/// The Python environment a submission's run will use: $PREREG_PYTHON, else the first `python3`
/// on PATH, as named (a virtual environment's bin/python3 is a link to the system's, and the
/// environment is the folder above bin/); empty when there is none. Kept through the private
/// scratch: a virtual environment made under /tmp must stay usable.
fs::path python_environment() {
  fs::path python;
  std::error_code ec;
  if (const char *p = std::getenv("PREREG_PYTHON"); p != nullptr && *p == '/') {
    python = p;
  } else if (const char *path = std::getenv("PATH"); path != nullptr) {
    std::string list = path;
    for (std::size_t start = 0; start <= list.size();) {
      const std::size_t end = list.find(':', start);
      const std::string dir = list.substr(start, end == std::string::npos ? end : end - start);
      if (!dir.empty() && dir.front() == '/' &&
          ::access((fs::path(dir) / "python3").c_str(), X_OK) == 0) {
        python = fs::path(dir) / "python3";
        break;
      }
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
  }
  if (python.empty())
    return {};
  const fs::path bin = python.lexically_normal().parent_path();
  const fs::path root = bin.filename() == "bin" ? bin.parent_path() : bin;
  return fs::is_directory(root, ec) && root != "/" ? root : fs::path();
}

/// New user and mount namespaces with the same uid and gid inside; mounts stay private.
bool enter_namespaces(confine_facts &f) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    f.reason = errno_text("user and mount namespaces are not available (unshare)");
    return false;
  }
  if (!write_proc_file("/proc/self/setgroups", "deny") ||
      !write_proc_file("/proc/self/uid_map", fmt::format("{} {} 1\n", uid, uid)) ||
      !write_proc_file("/proc/self/gid_map", fmt::format("{} {} 1\n", gid, gid)) ||
      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    f.reason = errno_text("the new user namespace could not be set up");
    return false;
  }
  f.layers.emplace_back("user-namespace");
  f.layers.emplace_back("mount-namespace");
  return true;
}

/// Shows `p` (opened before as `fd`) again at its path, below a tmpfs that now hides it.
bool show_again(const fs::path &p, int fd) {
  std::error_code ec;
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return false;
  if (S_ISDIR(st.st_mode)) {
    fs::create_directories(p, ec);
  } else {
    fs::create_directories(p.parent_path(), ec);
    const int made = ::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (made >= 0)
      ::close(made);
  }
  const std::string source = fmt::format("/proc/self/fd/{}", fd);
  return ::mount(source.c_str(), p.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0;
}

/// Every path the walls must not lose (kept, and shown again below masks), opened by path.
std::map<fs::path, int> open_all(const confine_plan &plan) {
  std::map<fs::path, int> fds;
  const auto open_one = [&](const fs::path &p) {
    const fs::path c = canonical_or_same(p);
    if (fds.contains(c))
      return;
    const int fd = ::open(c.c_str(), O_PATH | O_CLOEXEC);
    if (fd >= 0)
      fds.emplace(c, fd);
  };
  for (const auto &p : plan.keep)
    open_one(p);
  for (const auto &[folder, shown] : plan.masks)
    for (const auto &p : shown)
      open_one(p);
  return fds;
}

/// Empty, private tmpfs over every scratch folder; kept paths below one shown again.
bool private_scratch(const std::map<fs::path, int> &fds, const confine_plan &plan,
                     confine_facts &f) {
  std::vector<fs::path> mounted;
  for (const auto &s : scratch_folders()) {
    if (std::any_of(mounted.begin(), mounted.end(),
                    [&](const fs::path &m) { return inside(m, s); }))
      continue; // private already, below a parent's tmpfs
    if (::mount("prereg-scratch", s.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) {
      f.reason = errno_text(fmt::format("{} could not be made private", s.string()));
      return false;
    }
    mounted.push_back(s);
  }
  for (const auto &p : plan.keep) {
    const fs::path c = canonical_or_same(p);
    const bool hidden = std::any_of(mounted.begin(), mounted.end(),
                                    [&](const fs::path &m) { return inside(m, c); });
    if (hidden && (!fds.contains(c) || !show_again(c, fds.at(c)))) {
      f.reason = errno_text(fmt::format("{} could not be kept", c.string()));
      return false;
    }
  }
  f.layers.emplace_back("private-scratch");
  return true;
}

/// The masks (each folder emptied, its shown paths back) and the hidden files.
bool hide_others(const std::map<fs::path, int> &fds, const confine_plan &plan, confine_facts &f) {
  std::error_code ec;
  for (const auto &[folder, shown] : plan.masks) {
    const fs::path c = canonical_or_same(folder);
    if (!fs::is_directory(c, ec))
      continue;
    if (::mount("prereg-hidden", c.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
      f.reason = errno_text(fmt::format("{} could not be hidden", c.string()));
      return false;
    }
    for (const auto &p : shown) {
      const fs::path sc = canonical_or_same(p);
      if (fds.contains(sc) && !show_again(sc, fds.at(sc))) {
        f.reason = errno_text(fmt::format("{} could not be shown again", sc.string()));
        return false;
      }
    }
  }
  for (const auto &file : plan.hidden_files) {
    const fs::path c = canonical_or_same(file);
    if (fs::exists(c, ec) && ::mount("/dev/null", c.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      f.reason = errno_text(fmt::format("{} could not be hidden", c.string()));
      return false;
    }
  }
  f.layers.emplace_back("others-hidden");
  return true;
}

/// The walls, in order; each left out (with the reason) where the system refuses it.
confine_facts confine_here(const confine_plan &plan) {
  confine_facts f;
  if (!enter_namespaces(f))
    return f; // no walls at all: the file system is as it was
  // Opened in the new mount namespace (a bind's source must be one of its mounts), before
  // anything is mounted over them.
  const std::map<fs::path, int> fds = open_all(plan);
  if (private_scratch(fds, plan, f))
    (void)hide_others(fds, plan, f);
  for (const auto &[p, fd] : fds)
    ::close(fd);
  return f;
}

/// Reaps `pid`, killing it (SIGKILL) once `limit_s` seconds have passed; `killed` says so.
wait_status wait_within(pid_t pid, double limit_s, bool &killed) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return wait_status{true, status};
    if (r < 0 && errno != EINTR)
      return wait_for(pid);
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      killed = true;
      return wait_for(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// The child: its output into the files, the walls, their facts up the pipe, then `body`.
[[noreturn]] void confined_child(const std::function<void()> &body, const confine_plan &plan,
                                 const fs::path &out, const fs::path &err, int facts_fd) {
  const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0)
    std::_Exit(127);
  const confine_facts f = plan.walls ? confine_here(plan) : confine_facts{{}, "not confined"};
  (void)write_all(facts_fd, canonical_json(f.to_json()));
  ::close(facts_fd);
  if (f.half_built())
    std::_Exit(126); // some walls stand and others do not: what it would see is undefined
  body();
  std::_Exit(127);
}

} // namespace

json confine_facts::to_json() const { return {{"layers", layers}, {"reason", reason}}; }

bool confine_facts::half_built() const { return !layers.empty() && !reason.empty(); }

confined_result run_confined(const std::vector<std::string> &argv, const confine_plan &plan,
                             const fs::path &stdout_file, const fs::path &stderr_file) {
  return run_confined_body(
      [&] {
        std::vector<char *> args;
        for (const auto &a : argv)
          args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        ::execv(args[0], args.data());
      },
      plan, stdout_file, stderr_file);
}

confined_result run_confined_body(const std::function<void()> &body, const confine_plan &plan,
                                  const fs::path &stdout_file, const fs::path &stderr_file,
                                  double limit_s) {
  confine_plan walls = plan;
  if (const fs::path env = python_environment(); walls.walls && !env.empty())
    walls.keep.push_back(env);
  pipe_ends facts = open_pipe(on_exec::close);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork_child([&] {
    facts.read.reset();
    confined_child(body, walls, stdout_file, stderr_file, facts.write.get());
  });
  facts.write.reset();
  const std::string text = read_all(facts.read.get());
  confined_result r;
  const wait_status status = limit_s > 0 ? wait_within(pid, limit_s, r.timed_out) : wait_for(pid);
  r.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  r.exit_code = status.exited() ? status.exit_code() : 128 + status.signal();
  try {
    const json j = parse_json_strict(text, "the confined process's facts");
    r.facts.layers = j.at("layers").get<std::vector<std::string>>();
    r.facts.reason = j.at("reason").get<std::string>();
  } catch (const std::exception &) {
    r.facts.reason = "the confined process sent no facts (it ended before its walls stood)";
  }
  return r;
}

} // namespace prereg::grade
