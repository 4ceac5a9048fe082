// The sandbox's mounts (sandbox_detail.hpp), made in its own mount namespace: the tree
// read-only but the scratch folders, the store, the reports folder and the project read-only on
// top, the key and its folders masked, prereg's caches hidden, and /proc's kernel knobs
// read-only. Each a plain mount(2) or mount_setattr(2); a wall the system refuses is said in
// the reason.
#include "run/sandbox_detail.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
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

/// An empty, read-only tmpfs over `folder`, which nobody may enter (mode 000).
bool mask_folder(const fs::path &folder) {
  return ::mount("prereg-masked", folder.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                 "size=4k,mode=000") == 0;
}

/// The key file under /dev/null, and its folders (key_folders) under an empty tmpfs.
bool mask_key(const sandbox_paths &paths, std::string &reason) {
  std::error_code ec;
  for (const auto &f : key_folders(paths))
    if (!mask_folder(f)) {
      reason = errno_text("the key's folder could not be masked");
      return false;
    }
  const fs::path key = fs::weakly_canonical(paths.key, ec);
  if (fs::exists(key, ec) && ::mount("/dev/null", key.c_str(), nullptr, MS_BIND, nullptr) != 0 &&
      fs::exists(key, ec)) { // exists still: the folder's mask did not already hide it
    reason = errno_text("the key file could not be masked");
    return false;
  }
  return true;
}

/// Each hidden folder (prereg's caches) under an empty tmpfs, made first (0700) where it is
/// missing. A name that is not a folder of its own (a symlink) is not followed: the cache's
/// reader refuses it too.
bool hide_folders(const sandbox_paths &paths, std::string &reason) {
  for (const auto &h : paths.hidden) {
    std::error_code ec;
    fs::create_directories(h.parent_path(), ec);
    (void)::mkdir(h.c_str(), 0700);
    struct stat st {};
    if (::lstat(h.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      continue;
    if (!mask_folder(h)) {
      reason = errno_text("prereg's cache folder could not be hidden");
      return false;
    }
  }
  return true;
}

} // namespace

std::string errno_text(const char *what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

bool path_inside(const fs::path &folder, const fs::path &p) {
  const auto rel = p.lexically_relative(folder);
  return !rel.empty() && *rel.begin() != ".." && rel != ".";
}

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

std::vector<fs::path> key_folders(const sandbox_paths &paths) {
  std::error_code ec;
  std::vector<fs::path> folders, out;
  folders.push_back(fs::weakly_canonical(paths.key, ec).parent_path());
  if (const char *home = std::getenv("HOME"); home != nullptr && *home == '/')
    folders.push_back(fs::weakly_canonical(fs::path(home) / ".config" / "prereg", ec));
  if (const char *config = std::getenv("XDG_CONFIG_HOME"); config != nullptr && *config == '/')
    folders.push_back(fs::weakly_canonical(fs::path(config) / "prereg", ec));
  for (const auto &f : folders) {
    const bool needed = std::any_of(paths.must_stay_shown.begin(), paths.must_stay_shown.end(),
                                    [&](const fs::path &m) {
                                      const fs::path c = fs::weakly_canonical(m, ec);
                                      return c == f || path_inside(f, c);
                                    });
    if (!needed && fs::is_directory(f, ec) && std::find(out.begin(), out.end(), f) == out.end())
      out.push_back(f);
  }
  return out;
}

void protect_files(const sandbox_paths &paths, isolation_facts &facts) {
  std::string why;
  if (read_only_root(why))
    facts.layers.emplace_back("read-only-root");
  else
    facts.add_reason(why);
  const std::vector<fs::path> read_only = paths.read_only();
  bool store_ok = true;
  std::error_code ec;
  for (const auto &p : read_only)
    if (fs::is_directory(p, ec) && !bind_read_only(p))
      store_ok = false;
  // A scratch folder inside the project (not the store or the reports) is writable again: only
  // its own mount, so that the read-only binds below it (a store under /tmp) stay read-only.
  const std::vector<fs::path> sealed = {paths.store, paths.reports};
  for (const auto &s : scratch_folders())
    if (std::none_of(sealed.begin(), sealed.end(), [&](const fs::path &p) {
          return !p.empty() && (p == s || path_inside(p, s));
        }))
      (void)set_read_only(s, false, false);
  if (store_ok)
    facts.layers.emplace_back("read-only-store");
  else
    facts.add_reason(errno_text("the store or the reports folder could not be made read-only"));
  if (mask_key(paths, why) && hide_folders(paths, why))
    facts.layers.emplace_back("key-masked");
  else
    facts.add_reason(why);
}

bool protect_proc() {
  bool ok = true;
  for (const char *p : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}) {
    std::error_code ec;
    if (fs::exists(p, ec) && !bind_read_only(p))
      ok = false;
  }
  return ok;
}

} // namespace prereg::detail
