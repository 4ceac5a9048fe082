// The ledger's shared cache of a file's lines and entries, the verification of its lines and the
// per-user verified-prefix cache: internals of ledger.cpp, ledger_verify.cpp and
// ledger_prefix_cache.cpp.
#pragma once

#include "store/ledger.hpp"

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace prereg {
namespace ledger_detail {

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

} // namespace ledger_detail

struct ledger::cache {
  ledger_detail::file_identity id; ///< of the file these lines were read from
  bool loaded = false;
  std::vector<std::string> lines; ///< without their newlines
  std::vector<json> entries;      ///< the parsed lines, once entries() asked for them
  bool parsed = false;
  std::size_t verified = 0;         ///< leading lines verified with the append keys
  std::vector<std::string> signers; ///< the signers of the lines the last verification covered

  /// Splits `text` into lines; a last line without its newline is exit 3.
  void load(const std::string &text, const ledger_detail::file_identity &identity,
            const std::filesystem::path &file);
  /// Reads the whole file through `fd` (opened on `file`); the caller holds an flock on it.
  void load(int fd, const std::filesystem::path &file);
  /// Every line parsed strictly (exit 3 naming the first line that is not JSON).
  const std::vector<json> &parse(const std::filesystem::path &file);
};

namespace ledger_detail {

/// Checks lines [from, end) of `c` (seq order, the prev chain, canonical form, signatures);
/// throws exit 3 naming the first bad seq, its message prefixed by `prefix`. Sets c.verified to
/// the number of lines when all pass and `from` was c.verified.
void verify_lines(ledger::cache &c, const std::filesystem::path &file, const key_lookup &keys,
                  std::size_t from, const std::string &prefix, const signing_key *own = nullptr);

/// How many leading lines of `lines` the verified-prefix cache of `file` vouches for (0 when it
/// has no entry, or one whose MAC does not verify under this user's cache secret, whose bytes
/// differ or that records a signer `accepted` refuses); their signers go to `signers`
/// (ledger_prefix_cache.cpp; docs/store.md, "Verification cost").
[[nodiscard]] std::size_t cached_prefix(const std::filesystem::path &file,
                                        const std::vector<std::string> &lines,
                                        const std::function<bool(const std::string &)> &accepted,
                                        std::vector<std::string> &signers);
/// Records every line of `lines` as verified with `signers`, under a MAC; a cache that cannot
/// be written is skipped.
void store_prefix(const std::filesystem::path &file, const std::vector<std::string> &lines,
                  const std::vector<std::string> &signers);

} // namespace ledger_detail
} // namespace prereg
