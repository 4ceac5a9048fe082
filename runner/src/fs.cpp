// Whole-file reads, atomic writes (temp + fsync + rename + fsync dir) and flock-based locks.
#include "prereg/fs.hpp"

#include "prereg/error.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace prereg {
namespace {

std::string errno_text() { return std::strerror(errno); }

void fsync_dir(const std::filesystem::path &dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

} // namespace

std::string read_file(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error(std::string("cannot read file: ") + std::strerror(errno), path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw io_error("cannot read file", path.string());
  return ss.str();
}

void write_file_atomic(const std::filesystem::path &path, std::string_view bytes, unsigned mode) {
  const auto dir = path.parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) throw io_error("cannot create folder: " + ec.message(), dir.string());
  std::random_device rd;
  const auto tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                   std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw io_error("cannot create file: " + errno_text(), tmp);
  ::fchmod(fd, mode);
  const char *p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
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

file_lock::file_lock(const std::filesystem::path &path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (m_fd < 0) throw io_error("cannot open lock file: " + errno_text(), path.string());
  while (::flock(m_fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
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
