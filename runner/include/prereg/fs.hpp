// File helpers: whole-file reads, atomic writes, and an exclusive lock file.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace prereg {

/// The whole file's bytes; throws `error` (exit 1) naming the path if it cannot be read.
[[nodiscard]] std::string read_file(const std::filesystem::path &path);

/// Writes `bytes` to a temp file in the same folder, fsyncs it, renames it over `path` and
/// fsyncs the folder. Never leaves a half-written `path`. `mode` applies to the new file.
void write_file_atomic(const std::filesystem::path &path, std::string_view bytes,
                       unsigned mode = 0644);

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
