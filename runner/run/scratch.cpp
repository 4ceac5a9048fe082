// The measuring process's bounded scratch space (scratch.hpp): a tmpfs under overlays.
#include "run/scratch.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace prereg::detail {
namespace fs = std::filesystem;
namespace {

scratch_facts g_facts;

/// A folder to cover: its path and its directory as it was (O_PATH), before any mount.
struct lower_folder {
  fs::path path;
  int fd = -1;
  struct stat st {};
};

std::size_t depth(const fs::path &p) {
  return static_cast<std::size_t>(std::distance(p.begin(), p.end()));
}

/// The existing folders among `folders`, canonical, each once, parents before children.
std::vector<lower_folder> open_lowers(std::vector<fs::path> folders) {
  std::error_code ec;
  for (auto &f : folders)
    f = fs::weakly_canonical(f, ec);
  std::sort(folders.begin(), folders.end(), [](const fs::path &a, const fs::path &b) {
    return depth(a) != depth(b) ? depth(a) < depth(b) : a < b;
  });
  folders.erase(std::unique(folders.begin(), folders.end()), folders.end());
  std::vector<lower_folder> out;
  for (const auto &f : folders) {
    lower_folder l{f, ::open(f.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC), {}};
    if (l.fd >= 0 && ::fstat(l.fd, &l.st) == 0)
      out.push_back(l);
    else if (l.fd >= 0)
      ::close(l.fd);
  }
  return out;
}

/// The overlay of folder `i` over `lower`, its upper layer and work folder in the tmpfs `upper`.
bool mount_overlay(const lower_folder &lower, int upper, std::size_t i) {
  const std::string u = fmt::format("/proc/self/fd/{}/u{}", upper, i);
  const std::string w = fmt::format("/proc/self/fd/{}/w{}", upper, i);
  if (::mkdir(u.c_str(), 0700) != 0 || ::mkdir(w.c_str(), 0700) != 0)
    return false;
  (void)::chown(u.c_str(), lower.st.st_uid, lower.st.st_gid); // where they are mapped
  (void)::chmod(u.c_str(), lower.st.st_mode & 07777);
  const std::string options =
      fmt::format("lowerdir=/proc/self/fd/{},upperdir={},workdir={}", lower.fd, u, w);
  if (::mount("overlay", lower.path.c_str(), "overlay", MS_NOSUID | MS_NODEV, options.c_str()) == 0)
    return true;
  return ::mount("overlay", lower.path.c_str(), "overlay", MS_NOSUID | MS_NODEV,
                 (options + ",userxattr").c_str()) == 0;
}

/// The overlays over every folder but those that fail (said in `facts`).
void cover(const std::vector<lower_folder> &lowers, int upper, scratch_facts &facts) {
  for (std::size_t i = 0; i < lowers.size(); ++i) {
    if (mount_overlay(lowers[i], upper, i)) {
      facts.folders.push_back(lowers[i].path.string());
      continue;
    }
    if (facts.reason.empty())
      facts.reason = fmt::format("{} is not covered (overlay: {})", lowers[i].path.string(),
                                 std::strerror(errno));
    if (i == 0) // the tmpfs itself would hide the folder's contents: the folder as it was
      ::umount2(lowers[0].path.c_str(), MNT_DETACH);
  }
}

} // namespace

json scratch_facts::to_json() const {
  return {{"bytes", bytes}, {"folders", folders}, {"reason", reason}};
}

std::uint64_t scratch_limit_bytes(std::string &reason) {
  std::uint64_t mb = default_scratch_mb;
  if (const char *v = std::getenv("PREREG_SCRATCH_MB"); v != nullptr) {
    char *end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (errno == 0 && end != v && *end == '\0' && n >= 1 && n <= 1048576 && *v != '-')
      mb = n;
    else
      reason = fmt::format("PREREG_SCRATCH_MB is not a whole number of MiB from 1 to 1048576: "
                           "{} MiB, the default",
                           default_scratch_mb);
  }
  return mb << 20;
}

scratch_facts bound_scratch(std::vector<fs::path> folders) {
  scratch_facts facts;
  const std::uint64_t bytes = scratch_limit_bytes(facts.reason);
  const std::vector<lower_folder> lowers = open_lowers(std::move(folders));
  if (lowers.empty()) {
    facts.reason = "no scratch folder exists";
  } else if (::mount("prereg-scratch", lowers[0].path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                     fmt::format("size={},mode=0700", bytes).c_str()) != 0) {
    facts.reason =
        fmt::format("the scratch space could not be made (tmpfs: {})", std::strerror(errno));
  } else {
    const int upper = ::open(lowers[0].path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    cover(lowers, upper, facts);
    if (upper >= 0)
      ::close(upper);
    if (!facts.folders.empty())
      facts.bytes = bytes;
  }
  for (const auto &l : lowers)
    ::close(l.fd);
  g_facts = facts;
  return facts;
}

const scratch_facts &scratch_of_this_process() { return g_facts; }

} // namespace prereg::detail
