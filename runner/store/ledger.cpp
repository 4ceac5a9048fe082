// The hash-chained, signed, append-only ledger.
#include "store/ledger.hpp"

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

std::string errno_text() { return std::strerror(errno); }

/// What tells one state of the file from another: a file that was replaced, grew or was
/// edited in place has another identity. A missing file is the all-zero identity.
struct file_identity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  bool exists = false;
  bool operator==(const file_identity &) const = default;
};

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

/// Closes a file descriptor on scope exit.
struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

struct ledger::cache {
  file_identity id; ///< of the file these lines were read from
  bool loaded = false;
  std::vector<std::string> lines; ///< without their newlines
  std::vector<json> entries;      ///< the parsed lines, once entries() asked for them
  bool parsed = false;
  std::size_t verified = 0;         ///< leading lines verified with the append keys
  std::vector<std::string> signers; ///< the signers of the lines the last verification covered

  /// Splits `text` into lines; a last line without its newline is exit 3.
  void load(const std::string &text, const file_identity &identity,
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

  /// Reads the whole file through `fd` (opened on `file`); the caller holds an flock on it.
  void load(int fd, const std::filesystem::path &file) {
    struct stat st {};
    if (::fstat(fd, &st) != 0)
      throw io_error("cannot read file: " + errno_text(), file.string());
    load(read_all(fd, file), identity_of(st), file);
  }

  /// Every line parsed strictly (exit 3 naming the first line that is not JSON).
  const std::vector<json> &parse(const std::filesystem::path &file) {
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
};

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

namespace {
void verify_lines(ledger::cache &c, const std::filesystem::path &file, const key_lookup &keys,
                  std::size_t from, const std::string &prefix, const signing_key *own = nullptr);
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
    verify_lines(c, m_file, m_append_keys, c.verified, "refusing to append: ", &key);
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

namespace {

/// The per-user verified-prefix cache of a ledger (docs/store.md, "Verification cost"):
/// ${XDG_CACHE_HOME:-$HOME/.cache}/prereg/verified/<sha256 of the ledger's absolute path>.json,
/// {"bytes", "lines", "sha256" (of the first `bytes` bytes), "signers"}. Outside the store, so
/// that whoever can write the store cannot claim a forged prefix was verified.
std::filesystem::path prefix_cache_path(const std::filesystem::path &file) {
  std::filesystem::path base;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    base = x;
  else if (const char *h = std::getenv("HOME"); h && *h)
    base = std::filesystem::path(h) / ".cache";
  else
    return {};
  std::error_code ec;
  const auto abs = std::filesystem::absolute(file, ec).lexically_normal();
  return base / "prereg" / "verified" / (sha256_hex(abs.string()) + ".json");
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

/// How many leading lines of `lines` the cache vouches for, given that `accepted` must accept
/// every signer it records (0 if none, or the cache does not match the file).
std::size_t cached_prefix(const std::filesystem::path &file, const std::vector<std::string> &lines,
                          const std::function<bool(const std::string &)> &accepted,
                          std::vector<std::string> &signers) {
  const auto path = prefix_cache_path(file);
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec))
    return 0;
  try {
    const json c = parse_json_strict(read_file(path, 1 << 20), path.string());
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

void store_prefix(const std::filesystem::path &file, const std::vector<std::string> &lines,
                  const std::vector<std::string> &signers) {
  const auto path = prefix_cache_path(file);
  if (path.empty() || lines.empty())
    return;
  try {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    std::filesystem::permissions(path.parent_path(), std::filesystem::perms::owner_all, ec);
    write_file_atomic(path,
                      canonical_json({{"lines", lines.size()},
                                      {"sha256", sha256_hex(prefix_bytes(lines, lines.size()))},
                                      {"signers", signers}}),
                      0600);
  } catch (const std::exception &) {
    // a cache that cannot be written costs time, not correctness
  }
}

/// Checks lines [from, end) of `c` (seq order, the prev chain, canonical form, signatures);
/// throws exit 3 naming the first bad seq, its message prefixed by `prefix`. Sets c.verified to
/// the number of lines when all pass and `from` was c.verified.
void verify_lines(ledger::cache &c, const std::filesystem::path &file, const key_lookup &keys,
                  std::size_t from, const std::string &prefix, const signing_key *own) {
  const auto &ls = c.lines;
  // Each signer's key is looked up once (a lookup may read and parse a key file).
  std::map<std::string, std::optional<public_key>> known;
  const auto key_of = [&](const std::string &signer) -> const std::optional<public_key> & {
    auto it = known.find(signer);
    if (it == known.end()) {
      std::optional<public_key> k;
      if (own != nullptr && signer == own->fingerprint())
        k = own->public_part(); // the key appending now vouches for its own entries
      else if (!signer.empty() && keys)
        k = keys(signer);
      it = known.emplace(signer, std::move(k)).first;
    }
    return it->second;
  };
  const bool checks_signatures = keys || own != nullptr;
  const bool whole = from == 0;
  std::vector<std::string> signers;
  if (from > 0 && from == c.verified)
    signers = c.signers;
  if (whole && checks_signatures)
    from = cached_prefix(
        file, ls, [&](const std::string &fp) { return key_of(fp).has_value(); }, signers);
  std::string prev = from == 0 ? ledger_genesis : sha256_hex(ls[from - 1]);
  for (std::size_t i = from; i < ls.size(); ++i) {
    const std::size_t expected_seq = i + 1;
    const std::string where = fmt::format("{}:{}", file.string(), expected_seq);
    json local;
    const json *ep = nullptr;
    if (c.parsed) {
      ep = &c.entries[i];
    } else {
      try {
        local = parse_json_strict(ls[i], file.string());
      } catch (const error &) {
        throw integrity_error(
            fmt::format("{}ledger entry seq {} is not valid JSON", prefix, expected_seq), where);
      }
      ep = &local;
    }
    const json &e = *ep;
    if (!e.is_object() || !e.contains("seq") || !e["seq"].is_number_integer() ||
        e["seq"].get<std::int64_t>() != static_cast<std::int64_t>(expected_seq))
      throw integrity_error(
          fmt::format("{}ledger entry seq {} is out of order (deleted, inserted or reordered)",
                      prefix, expected_seq),
          where);
    if (!e.contains("prev") || e["prev"] != prev)
      throw integrity_error(fmt::format("{}ledger entry seq {} does not chain to the previous "
                                        "entry",
                                        prefix, expected_seq),
                            where);
    if (canonical_json(e) != ls[i])
      throw integrity_error(fmt::format("{}ledger entry seq {} is not in canonical form (edited)",
                                        prefix, expected_seq),
                            where);
    if (!checks_signatures) {
      prev = sha256_hex(ls[i]); // a ledger handle without keys checks the chain only
      continue;
    }
    const std::string signer = record_signer(e);
    const auto &key = key_of(signer);
    if (!key)
      throw integrity_error(fmt::format("{}ledger entry seq {} is signed by an unknown key {}",
                                        prefix, expected_seq, signer.empty() ? "(none)" : signer),
                            where);
    if (!verify_record(e, *key))
      throw integrity_error(fmt::format("{}ledger entry seq {} has an invalid signature (edited)",
                                        prefix, expected_seq),
                            where);
    if (std::find(signers.begin(), signers.end(), signer) == signers.end())
      signers.push_back(signer);
    prev = sha256_hex(ls[i]);
  }
  if (!checks_signatures)
    return;
  if (from < ls.size() || whole)
    store_prefix(file, ls, signers);
  c.signers = signers;
  if (from == c.verified || whole)
    c.verified = std::max(c.verified, ls.size());
}

} // namespace

std::size_t ledger::verify(const key_lookup &keys) const {
  cache &c = current();
  const std::size_t was_verified = c.verified;
  const key_lookup none = [](const std::string &) { return std::optional<public_key>(); };
  verify_lines(c, m_file, keys ? keys : none, 0, "");
  c.verified = was_verified; // verified with `keys`, which need not be the append keys
  return c.lines.size();
}

void ledger::verify_for_append(const signing_key *own) const {
  cache &c = current();
  verify_lines(c, m_file, m_append_keys, c.verified, "refusing to append: ", own);
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

json make_checkpoint(const ledger &l, const signing_key &key) {
  l.verify_for_append();
  const auto [seq, head] = l.head();
  if (seq == 0)
    throw integrity_error("the ledger is empty: nothing to checkpoint", l.path().string());
  return sign_record({{"checkpoint", "prereg-ledger-head"},
                      {"seq", seq},
                      {"head", head},
                      {"time", utc_now_rfc3339()},
                      {"signer", key.fingerprint()}},
                     key);
}

std::int64_t check_checkpoint(const ledger &l, const json &cp, const key_lookup &keys,
                              const std::string &where) {
  if (!cp.is_object() || cp.value("checkpoint", "") != "prereg-ledger-head" ||
      !cp.contains("seq") || !cp["seq"].is_number_integer() || !cp.contains("head") ||
      !cp["head"].is_string())
    throw integrity_error("not a prereg ledger checkpoint", where);
  const std::string signer = record_signer(cp);
  const auto key = signer.empty() || !keys ? std::nullopt : keys(signer);
  if (!key)
    throw integrity_error(fmt::format("the checkpoint is signed by an unknown key {}",
                                      signer.empty() ? "(none)" : signer),
                          where);
  if (!verify_record(cp, *key))
    throw integrity_error("the checkpoint's signature does not verify (edited)", where);
  const auto seq = cp["seq"].get<std::int64_t>();
  const std::string head = cp["head"].get<std::string>();
  const auto now = l.line_hash(seq);
  if (!now)
    throw integrity_error(fmt::format("the ledger no longer reaches checkpoint seq {} (it has {} "
                                      "entries): entries were cut from its end",
                                      seq, l.head().first),
                          where);
  if (*now != head)
    throw integrity_error(fmt::format("ledger line {} no longer hashes to checkpoint head {} "
                                      "(rewritten)",
                                      seq, head.substr(0, 12)),
                          where);
  return seq;
}

namespace {

/// What counts as an attempt: a run-start entry of the protocol.
bool is_run_start_of(const json &e, std::string_view protocol_hash) {
  return e.is_object() && e.value("event", "") == ledger_event::run_start &&
         e.value("protocol_hash", "") == protocol_hash;
}

} // namespace

std::int64_t attempts_of(std::span<const json> entries, std::string_view protocol_hash) {
  return static_cast<std::int64_t>(
      std::count_if(entries.begin(), entries.end(),
                    [&](const json &e) { return is_run_start_of(e, protocol_hash); }));
}

std::int64_t next_attempt(std::span<const json> entries, std::string_view protocol_hash) {
  return attempts_of(entries, protocol_hash) + 1;
}

std::vector<std::int64_t> attempt_numbers(std::span<const json> entries,
                                          std::string_view protocol_hash) {
  std::vector<std::int64_t> out(entries.size(), 0);
  std::int64_t seen = 0;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (is_run_start_of(entries[i], protocol_hash))
      out[i] = ++seen;
  return out;
}

} // namespace prereg
