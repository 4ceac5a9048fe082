// The copy-ceiling cache (ceiling_cache.hpp): signed entries read without following links, and
// written atomically by the process that holds the key.
#include "run/ceiling_cache.hpp"

#include "base/fs.hpp"
#include "base/time.hpp"
#include "crypto/signed_json.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace prereg {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t max_entry_bytes = std::size_t{1} << 20;

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("unknown");
}

fs::path entry_path(const json &identity) {
  return ceiling_cache_dir() / (sha256_hex(canonical_json(identity)).substr(0, 32) + ".json");
}

/// The bytes of the regular file `path` (opened without following a link), or "".
std::string read_no_follow(const fs::path &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return {};
  struct stat st {};
  std::string bytes;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::size_t>(st.st_size) <= max_entry_bytes) {
    bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n <= 0)
        break;
      got += static_cast<std::size_t>(n);
    }
    bytes.resize(got);
  }
  ::close(fd);
  return bytes;
}

/// `dir` and its parent are folders of this user, not links (created when missing).
bool own_folder(const fs::path &dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (const fs::path &p : {dir.parent_path(), dir}) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      return false;
  }
  return true;
}

} // namespace

fs::path ceiling_cache_dir() {
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x == '/')
    return fs::path(x) / "prereg" / "ceilings";
  if (const char *home = std::getenv("HOME"); home != nullptr && *home == '/')
    return fs::path(home) / ".cache" / "prereg" / "ceilings";
  return {};
}

json ceiling_identity(const json &environment, const std::string &device_kind) {
  json device = {{"kind", device_kind}};
  for (const char *k : {"device_name", "pci_bus_id", "cc", "sm_count", "memory_bytes",
                        "driver_version", "llc_bytes", "cores", "kernel", "machine"})
    if (environment.is_object() && environment.contains(k))
      device[k] = environment.at(k);
  return {{"host", host_name()},
          {"device", std::move(device)},
          {"build",
           {{"version", build_info::version},
            {"git_commit", build_info::git_commit},
            {"build_flags", build_info::build_flags}}}};
}

json find_ceiling(const json &identity, const signing_key &key, const std::string &at) {
  if (ceiling_cache_dir().empty())
    return nullptr;
  try {
    const fs::path path = entry_path(identity);
    const std::string bytes = read_no_follow(path);
    if (bytes.empty())
      return nullptr;
    const json e = parse_json_strict(bytes, path.string());
    if (!e.is_object() || !verify_record(e, key.public_part()) ||
        e.value("identity", json()) != identity)
      return nullptr;
    const auto measured = rfc3339_seconds(e.value("measured_at", ""));
    const auto now = rfc3339_seconds(at);
    if (!measured || !now || *measured > *now || *now - *measured > ceiling_reuse_max_age_s)
      return nullptr;
    return e;
  } catch (const std::exception &) {
    return nullptr;
  }
}

void remember_ceiling(const json &identity, const instrument_record &in,
                      const std::string &measured_at, const std::string &source,
                      const signing_key &key) {
  if (in.ceiling_reused || in.flush_bytes == 0 || in.ceiling_samples_gbps.empty() ||
      ceiling_cache_dir().empty())
    return;
  try {
    const fs::path dir = ceiling_cache_dir();
    if (!own_folder(dir))
      return;
    const json entry = sign_record({{"cache", "prereg copy ceiling"},
                                    {"identity", identity},
                                    {"measured_at", measured_at},
                                    {"source", source},
                                    {"ceiling_bytes", in.ceiling_bytes},
                                    {"flush_bytes", in.flush_bytes},
                                    {"flush_method", in.flush_method},
                                    {"ceiling_gbps", in.ceiling_gbps},
                                    {"ceiling_samples_gbps", in.ceiling_samples_gbps},
                                    {"signer", key.fingerprint()}},
                                   key);
    write_file_atomic(entry_path(identity), canonical_json(entry), 0600);
  } catch (const std::exception &) {
    // the cache only saves time: a run never fails for it
  }
}

void check_ceiling_reuse(const instrument_record &in, const json &offered) {
  if (!in.ceiling_reused)
    return;
  bool same = offered.is_object() && *in.ceiling_reused == offered;
  try {
    same =
        same && in.ceiling_gbps == offered.at("ceiling_gbps").get<double>() &&
        in.ceiling_samples_gbps == offered.at("ceiling_samples_gbps").get<std::vector<double>>() &&
        in.ceiling_bytes == offered.at("ceiling_bytes").get<std::uint64_t>();
  } catch (const std::exception &) {
    same = false;
  }
  if (!same)
    throw io_error("the measuring process reports a reused copy ceiling that is not the one it "
                   "was offered; the run failed");
}

} // namespace prereg
