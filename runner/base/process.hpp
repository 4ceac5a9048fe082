// Child processes: owned file descriptors, pipes, fork and exec, whole reads and writes, and
// waiting for a child with its exit status or signal decoded. No prereg concept lives here.
#pragma once

#include "prereg/error.hpp"

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// A failed pipe(2) or fork(2): exit 1, `what()` is "<call>: <strerror(errno)>".
class process_error : public error {
public:
  process_error(std::string call, int error_number);
  /// "pipe" or "fork".
  [[nodiscard]] const std::string &call() const noexcept { return m_call; }
  [[nodiscard]] int error_number() const noexcept { return m_errno; }

private:
  std::string m_call;
  int m_errno;
};

/// A file descriptor owned by one object: closed when it is reset or goes (-1: none).
class unique_fd {
public:
  unique_fd() = default;
  explicit unique_fd(int fd) : m_fd(fd) {}
  ~unique_fd() { reset(); }
  unique_fd(unique_fd &&other) noexcept : m_fd(other.release()) {}
  unique_fd &operator=(unique_fd &&other) noexcept;
  unique_fd(const unique_fd &) = delete;
  unique_fd &operator=(const unique_fd &) = delete;

  [[nodiscard]] int get() const noexcept { return m_fd; }
  /// Gives up ownership: the descriptor, which the caller now closes.
  [[nodiscard]] int release() noexcept;
  /// Closes the descriptor, if any.
  void reset() noexcept;

private:
  int m_fd = -1;
};

/// The two ends of a pipe.
struct pipe_ends {
  unique_fd read;
  unique_fd write;
};

/// Whether a new pipe's ends are closed when a child execs.
enum class on_exec { close, inherit };

/// A new pipe; throws process_error("pipe", errno) when none can be made.
[[nodiscard]] pipe_ends open_pipe(on_exec mode);

/// Forks: the child runs `child`, which should end the child itself (`_Exit`, exec); if it
/// returns, the child ends with _Exit(127). Returns the child's pid in the parent; throws
/// process_error("fork", errno) when no child could be made.
[[nodiscard]] pid_t fork_child(const std::function<void()> &child);

/// A child started by spawn_reading_stdout: its pid and the read end of its stdout.
struct spawned_child {
  pid_t pid = -1;
  unique_fd stdout_read;
};

/// Starts `argv[0]` with `argv` (execv: this process's environment and every descriptor not
/// marked close-on-exec), its stdout the write end of a new inheritable pipe whose read end
/// the parent keeps. A child that cannot exec ends with status 127.
[[nodiscard]] spawned_child spawn_reading_stdout(const std::vector<std::string> &argv);

/// Everything `fd` yields until end of file (a read error ends it early); retried on EINTR.
[[nodiscard]] std::string read_all(int fd);

/// Writes all of `bytes` to `fd`, retrying on EINTR; false if the other end is gone.
[[nodiscard]] bool write_all(int fd, std::string_view bytes);

/// Writes `text` into the existing file `path` with one write(2) (a /proc file such as uid_map
/// or setgroups, which takes a whole line at once); false on any failure.
[[nodiscard]] bool write_proc_file(const char *path, std::string_view text);

/// Writes `bytes` to `fd` as far as it goes and never throws: for stderr, which may be a full
/// disk or a closed pipe (docs/hardening.md, "Faults"). False if not all of it was written.
bool write_best_effort(int fd, std::string_view bytes) noexcept;

/// "prereg: TEXT\n" on stderr, best effort (write_best_effort): a notice that cannot be
/// written never fails or ends the command.
void notice(std::string_view text) noexcept;

/// How a waited-for child ended (the raw status of waitpid(2), 0 if it could not be reaped).
struct wait_status {
  bool reaped = false; ///< waitpid returned the child
  int status = 0;

  [[nodiscard]] bool exited() const;
  /// The exit status; meaningful when exited().
  [[nodiscard]] int exit_code() const;
  [[nodiscard]] bool signalled() const;
  /// The signal that ended it; meaningful when signalled().
  [[nodiscard]] int signal() const;
};

/// Waits for the child `pid` to end, retrying on EINTR.
[[nodiscard]] wait_status wait_for(pid_t pid);

/// Sends SIGKILL to the child `pid` and waits for it to end.
void kill_and_wait(pid_t pid);

} // namespace prereg
