// File helpers: whole-file reads, atomic writes, an exclusive lock file, and the small POSIX
// pieces the store and the key loader share (errno's text, a descriptor closed on scope exit).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace prereg {

/// strerror(errno): the text of the last failed system call's error.
[[nodiscard]] std::string errno_text();

/// Closes a file descriptor on scope exit; a negative one (a failed open) is left alone.
struct fd_closer {
  int fd;
  ~fd_closer();
};

/// The most read_file reads by default: 1 GiB (a report of 1e8 samples is about 2 GB; see
/// docs/hardening.md).
inline constexpr std::size_t default_max_read_bytes = std::size_t{1} << 30;

/// The whole file's bytes. Only a regular file is read (a FIFO, device, socket or folder is
/// refused with exit 2 without blocking), and at most `max_bytes`: a longer file is exit 2,
/// noticed while reading. Throws exit 1 naming the path if it cannot be read.
[[nodiscard]] std::string read_file(const std::filesystem::path &path,
                                    std::size_t max_bytes = default_max_read_bytes);

/// fsyncs the folder `dir` ("." when empty), so a rename or a new file in it survives a crash;
/// throws io_error when the folder cannot be opened or synced.
void fsync_dir(const std::filesystem::path &dir);

/// Writes `bytes` to a temp file in the same folder, fsyncs it, renames it over `path` and
/// fsyncs the folder. Never leaves a half-written `path`. `mode` applies to the new file.
void write_file_atomic(const std::filesystem::path &path, std::string_view bytes,
                       unsigned mode = 0644);

/// Creates the folder `dir` (and its missing parents); false if `dir` already exists. The last
/// step is one mkdir(2), so of two processes creating the same folder exactly one gets true.
[[nodiscard]] bool create_directory_exclusive(const std::filesystem::path &dir);

/// Renames `from` to `to`, failing (exit 1) if `to` exists: renameat2(RENAME_NOREPLACE), or on
/// a file system without it a check then rename.
void rename_no_replace(const std::filesystem::path &from, const std::filesystem::path &to);

/// Holds an exclusive flock on a lock file for its lifetime (serialises store writers).
class file_lock {
public:
  explicit file_lock(const std::filesystem::path &path);
  file_lock(const file_lock &) = delete;
  file_lock &operator=(const file_lock &) = delete;
  ~file_lock();

private:
  int m_fd = -1;
};

} // namespace prereg
