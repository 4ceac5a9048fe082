// Landlock over the measuring process's writes (sandbox_detail.hpp): a second wall behind the
// read-only mounts, which holds even if a mount were made writable again. Raw system calls: the
// kernel's ABI version decides which rights exist (docs/engine.md, "The measuring process").
#include "run/sandbox_detail.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace prereg::detail {
namespace {

// linux/landlock.h of the newest ABI used here (the build machine's header may be older).
constexpr std::uint64_t fs_write_file = 1ULL << 1;
constexpr std::uint64_t fs_remove_dir = 1ULL << 4;
constexpr std::uint64_t fs_remove_file = 1ULL << 5;
constexpr std::uint64_t fs_make_char = 1ULL << 6;
constexpr std::uint64_t fs_make_dir = 1ULL << 7;
constexpr std::uint64_t fs_make_reg = 1ULL << 8;
constexpr std::uint64_t fs_make_sock = 1ULL << 9;
constexpr std::uint64_t fs_make_fifo = 1ULL << 10;
constexpr std::uint64_t fs_make_block = 1ULL << 11;
constexpr std::uint64_t fs_make_sym = 1ULL << 12;
constexpr std::uint64_t fs_refer = 1ULL << 13;    // ABI 2
constexpr std::uint64_t fs_truncate = 1ULL << 14; // ABI 3
constexpr std::uint64_t scope_signal = 1ULL << 1; // ABI 6
constexpr unsigned create_ruleset_version = 1U << 0;
constexpr int rule_path_beneath = 1;

struct ruleset_attr {
  std::uint64_t handled_access_fs = 0;
  std::uint64_t handled_access_net = 0; // ABI 4
  std::uint64_t scoped = 0;             // ABI 6
};

struct __attribute__((packed)) path_beneath_attr {
  std::uint64_t allowed_access = 0;
  std::int32_t parent_fd = -1;
};

/// The rights this ABI handles: every kind of write (reads and execution stay free: the
/// masks hide what must not be read).
std::uint64_t write_rights(long abi) {
  std::uint64_t r = fs_write_file | fs_remove_dir | fs_remove_file | fs_make_char | fs_make_dir |
                    fs_make_reg | fs_make_sock | fs_make_fifo | fs_make_block | fs_make_sym;
  if (abi >= 2)
    r |= fs_refer;
  if (abi >= 3)
    r |= fs_truncate;
  return r;
}

/// Allows `rights` below `folder` in `ruleset`; false if the folder cannot be opened.
bool allow(int ruleset, const std::filesystem::path &folder, std::uint64_t rights) {
  const int fd = ::open(folder.c_str(), O_PATH | O_CLOEXEC | O_DIRECTORY);
  if (fd < 0)
    return false;
  path_beneath_attr rule{rights, fd};
  const long r = ::syscall(SYS_landlock_add_rule, ruleset, rule_path_beneath, &rule, 0);
  ::close(fd);
  return r == 0;
}

/// A rule on this process's own /proc/PID/task: the CUDA driver names the threads it starts by
/// writing /proc/self/task/TID/comm, and its initialisation fails (cudaErrorOperatingSystem)
/// where it cannot. The folder stays open (close-on-exec), so that procfs keeps the very inode
/// that carries the rule (a folder looked up again could be a new inode, without it). A folder
/// that cannot be opened leaves the walls as they are (tighter); a CUDA arm then says why.
int own_threads_fd = -1;

void allow_own_threads(int ruleset, std::uint64_t rights) {
  const int fd = ::open("/proc/self/task", O_PATH | O_CLOEXEC | O_DIRECTORY);
  if (fd < 0)
    return;
  path_beneath_attr rule{rights, fd};
  if (::syscall(SYS_landlock_add_rule, ruleset, rule_path_beneath, &rule, 0) != 0) {
    ::close(fd);
    return;
  }
  own_threads_fd = fd;
}

} // namespace

int own_threads_folder() { return own_threads_fd; }

std::string restrict_writes() {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, create_ruleset_version);
  if (abi < 0)
    return errno == ENOSYS || errno == EOPNOTSUPP
               ? fmt::format("unavailable (this kernel has no Landlock: {})", std::strerror(errno))
               : errno_text("unavailable (landlock_create_ruleset)");
  // ABI 1 forbids every rename and link across folders, which Triton's and torch.compile's
  // caches do; ABI 2 (Linux 5.19) lets a rule allow them.
  if (abi < 2)
    return fmt::format("unavailable (Landlock ABI {} cannot allow renames across folders, which "
                       "the Python tools' caches need; ABI 2 is Linux 5.19)",
                       abi);
  const std::uint64_t rights = write_rights(abi);
  ruleset_attr attr;
  attr.handled_access_fs = rights;
  std::size_t size = sizeof(std::uint64_t);
  if (abi >= 6) { // signals only to this domain: nothing outside the sandbox can be signalled
    attr.scoped = scope_signal;
    size = sizeof attr;
  }
  const int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0u));
  if (ruleset < 0)
    return errno_text("unavailable (landlock_create_ruleset)");
  bool ok = true;
  for (const auto &folder : scratch_folders())
    ok = allow(ruleset, folder, rights) && ok;
  // Device files (the GPU's, /dev/null, a terminal) open for writing; nothing is made there.
  ok = allow(ruleset, "/dev", fs_write_file | (abi >= 3 ? fs_truncate : 0)) && ok;
  allow_own_threads(ruleset, fs_write_file | (abi >= 3 ? fs_truncate : 0));
  std::string why;
  if (!ok)
    why = errno_text("a rule could not be added (landlock_add_rule)");
  else if (::syscall(SYS_landlock_restrict_self, ruleset, 0u) != 0)
    why = errno_text("landlock_restrict_self");
  ::close(ruleset);
  return why.empty() ? why : "unavailable (" + why + ")";
}

} // namespace prereg::detail
