// Child processes: pipes, fork and exec, whole reads and writes, waiting with the status decoded.
#include "base/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace prereg {

process_error::process_error(std::string call, int error_number)
    : error(exit_code::failure, call + ": " + std::strerror(error_number)), m_call(std::move(call)),
      m_errno(error_number) {}

unique_fd &unique_fd::operator=(unique_fd &&other) noexcept {
  if (this != &other) {
    reset();
    m_fd = other.release();
  }
  return *this;
}

int unique_fd::release() noexcept {
  const int fd = m_fd;
  m_fd = -1;
  return fd;
}

void unique_fd::reset() noexcept {
  if (m_fd >= 0)
    ::close(m_fd);
  m_fd = -1;
}

pipe_ends open_pipe(on_exec mode) {
  int fds[2];
  if (::pipe2(fds, mode == on_exec::close ? O_CLOEXEC : 0) != 0)
    throw process_error("pipe", errno);
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

pid_t fork_child(const std::function<void()> &child) {
  const pid_t pid = ::fork();
  if (pid < 0)
    throw process_error("fork", errno);
  if (pid == 0) {
    child();
    std::_Exit(127);
  }
  return pid;
}

spawned_child spawn_reading_stdout(const std::vector<std::string> &argv) {
  pipe_ends out = open_pipe(on_exec::inherit);
  std::vector<std::string> args = argv;
  std::vector<char *> cargv;
  for (auto &a : args)
    cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const int read_end = out.read.get(), write_end = out.write.get();
  const pid_t pid = fork_child([&] {
    ::dup2(write_end, STDOUT_FILENO);
    ::close(read_end);
    ::close(write_end);
    ::execv(cargv[0], cargv.data());
    std::_Exit(127);
  });
  out.write.reset();
  return {pid, std::move(out.read)};
}

std::string read_all(int fd) {
  std::string text;
  char buf[4096];
  ssize_t got;
  while ((got = ::read(fd, buf, sizeof buf)) != 0) {
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      break;
    text.append(buf, static_cast<std::size_t>(got));
  }
  return text;
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool write_best_effort(int fd, std::string_view bytes) noexcept {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void notice(std::string_view text) noexcept {
  try {
    std::string line = "prereg: ";
    line.append(text);
    line += '\n';
    (void)write_best_effort(STDERR_FILENO, line);
  } catch (...) { // no memory for the line: nothing to say it with
  }
}

bool wait_status::exited() const { return WIFEXITED(status); }
int wait_status::exit_code() const { return WEXITSTATUS(status); }
bool wait_status::signalled() const { return WIFSIGNALED(status); }
int wait_status::signal() const { return WTERMSIG(status); }

wait_status wait_for(pid_t pid) {
  wait_status out;
  pid_t r;
  while ((r = ::waitpid(pid, &out.status, 0)) < 0 && errno == EINTR) {
  }
  out.reaped = r == pid;
  return out;
}

void kill_and_wait(pid_t pid) {
  ::kill(pid, SIGKILL);
  (void)wait_for(pid);
}

bool write_proc_file(const char *path, std::string_view text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

} // namespace prereg
