// The per-user verified-prefix cache of a ledger (docs/store.md, "Verification cost"): read and
// written only through descriptors opened without following a symlink below the user's cache
// folder, and trusted only when its MAC, made with a secret that only the user's own prereg
// processes can read, verifies. Outside code never reaches it: the sandbox hides the folder
// (docs/engine.md, "The measuring process").
#include "store/ledger_cache.hpp"

#include "base/process.hpp"
#include "crypto/crypto.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace prereg {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t secret_hex_size = 64; // 32 random bytes
constexpr std::size_t entry_limit = 1 << 20;

/// ${XDG_CACHE_HOME:-$HOME/.cache}: the user's cache folder (followed as the user set it up).
fs::path cache_base() {
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x == '/')
    return x;
  if (const char *h = std::getenv("HOME"); h != nullptr && *h == '/')
    return fs::path(h) / ".cache";
  return {};
}

/// `name` below the folder `dir`, a folder of this user's that no one else may write, opened
/// without following a symlink; made (0700) first when `create`. -1 when it is none of that.
int open_folder(int dir, const char *name, bool create) {
  if (create && ::mkdirat(dir, name, 0700) != 0 && errno != EEXIST)
    return -1;
  const int fd = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid() ||
      ((st.st_mode & 077) != 0 && ::fchmod(fd, 0700) != 0)) { // on the descriptor, never a path
    ::close(fd);
    return -1;
  }
  return fd;
}

/// The cache folder .../prereg/verified, opened; -1 when there is none (or it is not safe).
unique_fd open_cache(bool create) {
  const fs::path base = cache_base();
  if (base.empty())
    return unique_fd();
  std::error_code ec;
  if (create)
    fs::create_directories(base, ec);
  unique_fd b(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (b.get() < 0)
    return unique_fd();
  unique_fd prereg(open_folder(b.get(), "prereg", create));
  if (prereg.get() < 0)
    return unique_fd();
  return unique_fd(open_folder(prereg.get(), "verified", create));
}

/// The regular file `name` in `dir` (not a symlink, this user's, at most `limit` bytes), or
/// nullopt.
std::optional<std::string> read_at(int dir, const std::string &name, std::size_t limit) {
  unique_fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_uid != ::geteuid() || static_cast<std::size_t>(st.st_size) > limit)
    return std::nullopt;
  std::string text = read_all(fd.get());
  if (text.size() > limit)
    return std::nullopt;
  return text;
}

/// Writes `bytes` to a new file in `dir` and links it as `name`: with `replace`, renamed over
/// what is there; without, only if `name` does not exist yet. False if it was not written.
bool publish_at(int dir, const std::string &name, const std::string &bytes, bool replace) {
  const std::string tmp =
      fmt::format(".{}.{}.{}", name, ::getpid(), sha256_hex(random_bytes(8)).substr(0, 12));
  unique_fd fd(
      ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0)
    return false;
  const bool written = write_all(fd.get(), bytes);
  fd.reset();
  bool ok = false;
  if (written)
    ok = replace ? ::renameat(dir, tmp.c_str(), dir, name.c_str()) == 0
                 : ::linkat(dir, tmp.c_str(), dir, name.c_str(), 0) == 0;
  if (!ok || !replace)
    ::unlinkat(dir, tmp.c_str(), 0);
  return ok;
}

/// The user's cache secret (mac.key: 64 hex digits of 32 random bytes), made on first use;
/// nullopt when it cannot be read.
std::optional<std::string> secret(int dir, bool create) {
  auto s = read_at(dir, "mac.key", secret_hex_size);
  if (!s && create) {
    (void)publish_at(dir, "mac.key", sha256_hex(random_bytes(32)), false); // first one wins
    s = read_at(dir, "mac.key", secret_hex_size);
  }
  if (!s || s->size() != secret_hex_size)
    return std::nullopt;
  return s;
}

/// The entry's name: SHA-256 of the ledger's absolute path.
std::string entry_name(const fs::path &file) {
  std::error_code ec;
  return sha256_hex(fs::absolute(file, ec).lexically_normal().string()) + ".json";
}

/// The bytes of lines [0, n) with their newlines.
std::string prefix_bytes(const std::vector<std::string> &lines, std::size_t n) {
  std::string text;
  for (std::size_t i = 0; i < n; ++i) {
    text += lines[i];
    text += '\n';
  }
  return text;
}

/// What the MAC covers: the entry without its mac, with the ledger's path.
std::string mac_input(const fs::path &file, const json &entry) {
  std::error_code ec;
  json j = entry;
  j.erase("mac");
  j["ledger"] = fs::absolute(file, ec).lexically_normal().string();
  return canonical_json(j);
}

} // namespace

fs::path verified_cache_folder() {
  const fs::path base = cache_base();
  return base.empty() ? base : base / "prereg";
}

std::size_t ledger_detail::cached_prefix(const fs::path &file,
                                         const std::vector<std::string> &lines,
                                         const std::function<bool(const std::string &)> &accepted,
                                         std::vector<std::string> &signers) {
  const unique_fd dir = open_cache(false);
  if (dir.get() < 0)
    return 0;
  const auto key = secret(dir.get(), false);
  const auto text = read_at(dir.get(), entry_name(file), entry_limit);
  if (!key || !text)
    return 0;
  try {
    const json c = parse_json_strict(*text, "the verified-prefix cache");
    // Only an entry this user's prereg made: its MAC under the secret verifies.
    if (!c.contains("mac") || c.at("mac") != hmac_sha256_hex(*key, mac_input(file, c)))
      return 0;
    const auto n = c.at("lines").get<std::size_t>();
    if (n == 0 || n > lines.size() || sha256_hex(prefix_bytes(lines, n)) != c.at("sha256"))
      return 0;
    std::vector<std::string> who = c.at("signers").get<std::vector<std::string>>();
    for (const auto &fp : who)
      if (!accepted(fp))
        return 0;
    signers = std::move(who);
    return n;
  } catch (const std::exception &) {
    return 0; // an unreadable cache is no cache
  }
}

void ledger_detail::store_prefix(const fs::path &file, const std::vector<std::string> &lines,
                                 const std::vector<std::string> &signers) {
  if (lines.empty())
    return;
  try {
    const unique_fd dir = open_cache(true);
    if (dir.get() < 0)
      return;
    const auto key = secret(dir.get(), true);
    if (!key)
      return;
    json entry = {{"lines", lines.size()},
                  {"sha256", sha256_hex(prefix_bytes(lines, lines.size()))},
                  {"signers", signers}};
    entry["mac"] = hmac_sha256_hex(*key, mac_input(file, entry));
    (void)publish_at(dir.get(), entry_name(file), canonical_json(entry), true);
  } catch (const std::exception &) {
    // a cache that cannot be written costs time, not correctness
  }
}

} // namespace prereg
