// The measuring process's channel (channel.hpp): credentials checked on every chunk, a bounded
// message, each byte scanned once.
#include "run/channel.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace prereg::detail {
namespace {

constexpr std::size_t chunk_bytes = 65536;
constexpr int wait_ms = 100; ///< the longest wait between two calls of `between`

/// The parent pid of `pid` (/proc/PID/stat's fourth field, read after the command's last ')'),
/// or -1.
pid_t parent_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const auto close = s.rfind(')');
  if (close == std::string::npos)
    return -1;
  std::istringstream rest(s.substr(close + 1));
  std::string state;
  long ppid = -1;
  if (!(rest >> state >> ppid))
    return -1;
  return static_cast<pid_t>(ppid);
}

std::string bytes_text(std::size_t n) {
  return n >= (std::size_t{1} << 20) ? fmt::format("{} MiB", n >> 20) : fmt::format("{} bytes", n);
}

} // namespace

channel_ends open_channel() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw process_error("socketpair", errno);
  channel_ends ends{unique_fd(fds[0]), unique_fd(fds[1])};
  const int on = 1;
  if (::setsockopt(ends.parent.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0)
    throw process_error("setsockopt", errno);
  return ends;
}

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::size_t message_limit(std::size_t cells, std::int64_t repetitions) {
  const auto per_cell = (std::size_t{64} << 10) +
                        static_cast<std::size_t>(std::max<std::int64_t>(repetitions, 0)) * 4096;
  return message_limit_before_plan + cells * per_cell;
}

bool descends_from(pid_t pid, pid_t ancestor, int depth) {
  for (int i = 0; i <= depth && pid > 1; ++i) {
    if (pid == ancestor)
      return true;
    pid = parent_of(pid);
  }
  return false;
}

channel_reader::channel_reader(int fd, pid_t child) : m_fd(fd), m_child(child) {}

std::optional<std::string> channel_reader::next(const check &between) {
  for (;;) {
    const char *base = m_buffer.data();
    if (const void *nl = std::memchr(base + m_scanned, '\n', m_buffer.size() - m_scanned)) {
      const auto end = static_cast<std::size_t>(static_cast<const char *>(nl) - base);
      std::string line = m_buffer.substr(m_start, end - m_start);
      m_start = m_scanned = end + 1;
      if (m_start >= chunk_bytes && m_start * 2 >= m_buffer.size()) { // drop what was read
        m_buffer.erase(0, m_start);
        m_start = m_scanned = 0;
      }
      return line;
    }
    m_scanned = m_buffer.size();
    if (m_buffer.size() - m_start > m_limit)
      throw io_error(fmt::format("the measuring process sent a message of more than {} without "
                                 "a line end (the limit: docs/engine.md); the run failed",
                                 bytes_text(m_limit)));
    if (!fill(between))
      return std::nullopt;
  }
}

bool channel_reader::fill(const check &between) {
  for (;;) {
    between();
    pollfd p{m_fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno != EINTR)
      throw io_error(fmt::format("waiting for the measuring process: {}", std::strerror(errno)));
    if (ready <= 0)
      continue;
    const std::size_t old = m_buffer.size();
    m_buffer.resize(old + chunk_bytes);
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec io{m_buffer.data() + old, chunk_bytes};
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(m_fd, &msg, MSG_CMSG_CLOEXEC);
    const int err = errno;
    m_buffer.resize(old + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    if (n < 0 && (err == EINTR || err == EAGAIN))
      continue;
    if (n < 0)
      throw io_error(fmt::format("reading from the measuring process: {}", std::strerror(err)));
    if (n == 0)
      return false;
    pid_t pid = 0;
    for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred cred{};
        std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
        pid = cred.pid;
      } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        for (std::size_t k = 0; k * sizeof(int) < c->cmsg_len - CMSG_LEN(0); ++k) {
          int fd = -1;
          std::memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof fd);
          ::close(fd);
        }
        throw io_error("the measuring process sent file descriptors over its channel; the run "
                       "failed");
      }
    }
    if ((msg.msg_flags & MSG_CTRUNC) != 0)
      throw io_error("the measuring process sent ancillary data other than its credentials "
                     "over its channel; the run failed");
    accept_sender(pid, static_cast<std::size_t>(n));
    between();
    return true;
  }
}

/// The first chunk names the measuring process (sent before any outside code runs); every
/// later chunk must come from it.
void channel_reader::accept_sender(pid_t pid, std::size_t bytes) {
  if (m_sender == 0) {
    if (pid <= 0 || !descends_from(pid, m_child, 3))
      throw io_error(fmt::format("the measuring process's first message came from process {}, "
                                 "not from the process prereg forked (pid {}) or its "
                                 "descendants; the run failed",
                                 pid, m_child));
    m_sender = pid;
    return;
  }
  if (pid != m_sender)
    throw io_error(fmt::format("{} bytes on the measuring process's channel were written by "
                               "process {}, not by the measuring process (pid {}); the run failed",
                               bytes, pid, m_sender));
}

} // namespace prereg::detail
