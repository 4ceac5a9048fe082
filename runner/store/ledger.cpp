// The hash-chained, signed, append-only ledger.
#include "store/ledger.hpp"

#include "store/ledger_cache.hpp"

#include "base/fs.hpp"
#include "base/time.hpp"
#include "crypto/signed_json.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>

namespace prereg {
namespace {

using ledger_detail::file_identity;

file_identity identity_of(const struct stat &st) {
  return {st.st_dev,
          st.st_ino,
          st.st_size,
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
          static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec,
          true};
}

file_identity identity_of(const std::filesystem::path &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return {};
    throw io_error("cannot read file: " + errno_text(), path.string());
  }
  return identity_of(st);
}

/// All bytes of an open file from offset 0.
std::string read_all(int fd, const std::filesystem::path &path) {
  std::string text;
  char buf[1 << 16];
  off_t at = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw io_error("cannot read file: " + errno_text(), path.string());
    }
    if (n == 0)
      break;
    text.append(buf, static_cast<std::size_t>(n));
    at += n;
  }
  return text;
}

/// Holds an flock on an open file (released on scope exit, the fd stays open).
class fd_flock {
public:
  fd_flock(int fd, int how, const std::filesystem::path &path) : m_fd(fd) {
    while (::flock(m_fd, how) != 0) {
      if (errno == EINTR)
        continue;
      throw io_error("cannot lock: " + errno_text(), path.string());
    }
  }
  fd_flock(const fd_flock &) = delete;
  fd_flock &operator=(const fd_flock &) = delete;
  ~fd_flock() { ::flock(m_fd, LOCK_UN); }

private:
  int m_fd;
};

/// Throws exit 3 unless `fd` is a regular file (a FIFO or device as the ledger would hang or
/// never end).
void refuse_irregular(int fd, const std::filesystem::path &path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw io_error("cannot read file: " + errno_text(), path.string());
  if (!S_ISREG(st.st_mode))
    throw integrity_error("the ledger is not a regular file", path.string());
}

} // namespace

void ledger::cache::load(const std::string &text, const file_identity &identity,
                         const std::filesystem::path &file) {
  std::vector<std::string> old = std::move(lines);
  lines.clear();
  entries.clear();
  parsed = false;
  loaded = false;
  const std::size_t was_verified = verified;
  verified = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto nl = text.find('\n', start);
    if (nl == std::string::npos)
      throw integrity_error(
          fmt::format("ledger line {} has no final newline (truncated write?)", lines.size() + 1),
          file.string());
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  // Lines verified before stay verified if the file still starts with them (it grew).
  std::size_t same = 0;
  while (same < was_verified && same < lines.size() && same < old.size() &&
         lines[same] == old[same])
    ++same;
  verified = same == was_verified ? same : 0;
  id = identity;
  loaded = true;
}

void ledger::cache::load(int fd, const std::filesystem::path &file) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw io_error("cannot read file: " + errno_text(), file.string());
  load(read_all(fd, file), identity_of(st), file);
}

const std::vector<json> &ledger::cache::parse(const std::filesystem::path &file) {
  if (parsed)
    return entries;
  std::vector<json> out;
  out.reserve(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    try {
      out.push_back(parse_json_strict(lines[i], file.string()));
    } catch (const error &e) {
      throw integrity_error(fmt::format("ledger line {} is not valid JSON: {}", i + 1, e.what()),
                            fmt::format("{}:{}", file.string(), i + 1));
    }
  }
  entries = std::move(out);
  parsed = true;
  return entries;
}

namespace {

/// One cache per ledger file for the life of the process, so that every handle on the same file
/// (every store object, every copy) shares what was read, and references returned by entries()
/// outlive the handle that returned them.
std::shared_ptr<ledger::cache> cache_for(const std::filesystem::path &file) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<ledger::cache>> caches;
  std::error_code ec;
  auto key = std::filesystem::absolute(file, ec);
  const std::string name = (ec ? file : key).lexically_normal().string();
  const std::lock_guard<std::mutex> guard(mutex);
  auto &slot = caches[name];
  if (!slot)
    slot = std::make_shared<ledger::cache>();
  return slot;
}

} // namespace

ledger::ledger(std::filesystem::path file, key_lookup append_keys)
    : m_file(std::move(file)), m_append_keys(std::move(append_keys)), m_cache(cache_for(m_file)) {}

ledger::cache &ledger::current() const {
  cache &c = *m_cache;
  const file_identity now = identity_of(m_file);
  if (c.loaded && c.id == now)
    return c;
  if (!now.exists) {
    c.load(std::string(), now, m_file);
    return c;
  }
  const fd_closer fd{::open(m_file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (fd.fd < 0)
    throw io_error("cannot read file: " + errno_text(), m_file.string());
  refuse_irregular(fd.fd, m_file);
  // A shared lock on the ledger itself: an append holds it exclusively while it writes, so a
  // reader never sees half a line (also without the store's lock, also in a read-only store).
  const fd_flock lock(fd.fd, LOCK_SH, m_file);
  c.load(fd.fd, m_file);
  return c;
}

const std::vector<json> &ledger::entries() const { return current().parse(m_file); }

json ledger::append(json fields, const signing_key &key) {
  const auto dir = m_file.parent_path();
  std::error_code ec;
  if (!dir.empty())
    std::filesystem::create_directories(dir, ec);
  if (ec)
    throw io_error("cannot create folder: " + ec.message(), dir.string());
  const bool existed = identity_of(m_file).exists;
  const fd_closer fd{
      ::open(m_file.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644)};
  if (fd.fd < 0)
    throw io_error("cannot open file: " + errno_text(), m_file.string());
  refuse_irregular(fd.fd, m_file);
  off_t old_size = 0;
  try {
    const fd_flock lock(fd.fd, LOCK_EX, m_file);
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0)
      throw io_error("cannot read file: " + errno_text(), m_file.string());
    old_size = st.st_size;
    cache &c = *m_cache;
    if (!c.loaded || c.id != identity_of(st))
      c.load(fd.fd, m_file); // another process appended
    ledger_detail::verify_lines(c, m_file, m_append_keys, c.verified, "refusing to append: ", &key);
    fields["seq"] = c.lines.size() + 1;
    fields["time"] = utc_now_rfc3339();
    fields["prev"] = c.lines.empty() ? ledger_genesis : sha256_hex(c.lines.back());
    fields["signer"] = key.fingerprint();
    json entry = sign_record(std::move(fields), key);
    std::string line = canonical_json(entry);
    const std::string bytes = line + "\n";
    // One write() of the whole line at the end of the file (O_APPEND). A short write (a full
    // disk) or a failed fsync is cut back, so the ledger stays as it was.
    ssize_t n = 0;
    do {
      n = ::write(fd.fd, bytes.data(), bytes.size());
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(bytes.size()) || ::fsync(fd.fd) != 0) {
      const std::string why = n < 0 || n == static_cast<ssize_t>(bytes.size())
                                  ? errno_text()
                                  : std::string(std::strerror(ENOSPC));
      if (::ftruncate(fd.fd, old_size) == 0)
        (void)::fsync(fd.fd);
      throw io_error("cannot write file: " + why, m_file.string());
    }
    if (!existed)
      fsync_dir(dir);
    struct stat after {};
    if (::fstat(fd.fd, &after) != 0)
      throw io_error("cannot read file: " + errno_text(), m_file.string());
    c.lines.push_back(std::move(line));
    if (c.verified + 1 == c.lines.size())
      c.verified = c.lines.size(); // ours, signed by the append key
    if (c.parsed)
      c.entries.push_back(entry);
    c.id = identity_of(after);
    return entry;
  } catch (...) {
    m_cache->loaded = false; // read afresh next time
    if (!existed && old_size == 0) {
      std::error_code rm;
      std::filesystem::remove(m_file, rm); // no empty ledger left behind a failed first append
    }
    throw;
  }
}

const std::vector<std::string> &ledger::last_signers() const { return m_cache->signers; }

std::pair<std::int64_t, std::string> ledger::head() const {
  const cache &c = current();
  if (c.lines.empty())
    return {0, ledger_genesis};
  return {static_cast<std::int64_t>(c.lines.size()), sha256_hex(c.lines.back())};
}

std::optional<std::string> ledger::line_hash(std::int64_t seq) const {
  const cache &c = current();
  if (seq < 1 || static_cast<std::size_t>(seq) > c.lines.size())
    return std::nullopt;
  return sha256_hex(c.lines[static_cast<std::size_t>(seq) - 1]);
}

} // namespace prereg
