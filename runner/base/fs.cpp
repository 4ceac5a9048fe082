// Whole-file reads, atomic writes (temp + fsync + rename + fsync dir) and flock-based locks.
#include "base/fs.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace prereg {

std::string errno_text() { return std::strerror(errno); }

fd_closer::~fd_closer() {
  if (fd >= 0)
    ::close(fd);
}

void fsync_dir(const std::filesystem::path &dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    throw io_error("cannot open folder: " + errno_text(), dir.string());
  const int rc = ::fsync(fd);
  const auto why = errno_text();
  ::close(fd);
  if (rc != 0)
    throw io_error("cannot sync folder: " + why, dir.string());
}

std::string read_file(const std::filesystem::path &path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw io_error(std::string("cannot read file: ") + errno_text(), path.string());
  const fd_closer close_it{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw io_error("cannot read file: " + errno_text(), path.string());
  if (!S_ISREG(st.st_mode))
    throw invalid_input(
        fmt::format("not a regular file ({}): refused", S_ISDIR(st.st_mode)    ? "a folder"
                                                        : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                        : S_ISSOCK(st.st_mode) ? "a socket"
                                                                               : "a device"),
        path.string());
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw io_error("cannot read file: " + errno_text(), path.string());
    }
    if (n == 0)
      break;
    // The limit applies while reading: a file that grows (or lies about its size) stops here.
    if (text.size() + static_cast<std::size_t>(n) > max_bytes)
      throw invalid_input(fmt::format("file is more than the limit of {} bytes", max_bytes),
                          path.string());
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

void write_file_atomic(const std::filesystem::path &path, std::string_view bytes, unsigned mode) {
  const auto dir = path.parent_path();
  std::error_code ec;
  if (!dir.empty())
    std::filesystem::create_directories(dir, ec);
  if (ec)
    throw io_error("cannot create folder: " + ec.message(), dir.string());
  std::random_device rd;
  const auto tmp =
      path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    throw io_error("cannot create file: " + errno_text(), tmp);
  ::fchmod(fd, mode);
  const char *p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      const auto why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw io_error("cannot write file: " + why, path.string());
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const auto why = errno_text();
    ::unlink(tmp.c_str());
    throw io_error("cannot write file: " + why, path.string());
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const auto why = errno_text();
    ::unlink(tmp.c_str());
    throw io_error("cannot rename into place: " + why, path.string());
  }
  fsync_dir(dir);
}

bool create_directory_exclusive(const std::filesystem::path &dir) {
  std::error_code ec;
  if (dir.has_parent_path())
    std::filesystem::create_directories(dir.parent_path(), ec);
  if (ec)
    throw io_error("cannot create folder: " + ec.message(), dir.parent_path().string());
  if (::mkdir(dir.c_str(), 0755) == 0)
    return true;
  if (errno == EEXIST)
    return false;
  throw io_error("cannot create folder: " + errno_text(), dir.string());
}

void rename_no_replace(const std::filesystem::path &from, const std::filesystem::path &to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0)
    return;
  if (errno == EINVAL || errno == ENOSYS) {
    std::error_code ec;
    if (!std::filesystem::exists(to, ec) && ::rename(from.c_str(), to.c_str()) == 0)
      return;
    if (!ec && std::filesystem::exists(to, ec))
      errno = EEXIST;
  }
  throw io_error("cannot rename into place: " + errno_text(), to.string());
}

file_lock::file_lock(const std::filesystem::path &path) {
  std::error_code ec;
  if (path.has_parent_path())
    std::filesystem::create_directories(path.parent_path(), ec);
  m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (m_fd < 0)
    throw io_error("cannot open lock file: " + errno_text(), path.string());
  while (::flock(m_fd, LOCK_EX) != 0) {
    if (errno == EINTR)
      continue;
    const auto why = errno_text();
    ::close(m_fd);
    throw io_error("cannot lock: " + why, path.string());
  }
}

file_lock::~file_lock() {
  if (m_fd >= 0) {
    ::flock(m_fd, LOCK_UN);
    ::close(m_fd);
  }
}

} // namespace prereg
