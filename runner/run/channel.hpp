// The measuring process's channel (docs/engine.md, "The channel"): a Unix stream socket pair
// whose every byte the kernel tags with the pid of the process that wrote it (SO_PASSCRED);
// newline-framed messages, each bounded in size, scanned once, read with a check between waits.
// Internal to runner/run.
#pragma once

#include "base/process.hpp"

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prereg::detail {

/// The two ends of a channel: the parent's (credentials on) and the child's.
struct channel_ends {
  unique_fd parent;
  unique_fd child;
};

/// A connected AF_UNIX stream pair, close-on-exec, its parent end passing credentials before
/// anything is written. Throws process_error("socketpair" | "setsockopt", errno).
[[nodiscard]] channel_ends open_channel();

/// Writes all of `bytes` to a socket (MSG_NOSIGNAL: a closed peer is false, never SIGPIPE).
[[nodiscard]] bool send_all(int fd, std::string_view bytes);

/// The limit of a message before the plan is known [bytes] (docs/engine.md, "The channel").
inline constexpr std::size_t message_limit_before_plan = std::size_t{64} << 20;
/// The limit of the raw result of `cells` planned cells of at most `repetitions` samples each.
[[nodiscard]] std::size_t message_limit(std::size_t cells, std::int64_t repetitions);

/// Reads newline-framed messages from the parent's end of a channel. Every chunk must come
/// from one process: the first message's sender, which must be `child` or a descendant of it
/// (the measuring process inside its PID namespace); bytes from any other process, a message
/// longer than the limit, or file descriptors in the ancillary data fail the run (io_error,
/// exit 1). Bytes are scanned for the line end once.
class channel_reader {
public:
  channel_reader(int fd, pid_t child);
  void set_limit(std::size_t bytes) { m_limit = bytes; }
  /// Called after every read and at least every 100 ms while waiting: may throw (an interrupt,
  /// the watchdog).
  using check = std::function<void()>;
  /// The next line (without its end); nullopt at end of file.
  [[nodiscard]] std::optional<std::string> next(const check &between);
  /// Whether bytes without a line end are left.
  [[nodiscard]] bool pending() const { return m_buffer.size() > m_start; }
  /// The measuring process's pid as this process sees it (0 before the first chunk).
  [[nodiscard]] pid_t sender() const { return m_sender; }

private:
  /// Waits for bytes (calling `between`) and appends one chunk; false at end of file.
  bool fill(const check &between);
  void accept_sender(pid_t pid, std::size_t bytes);

  int m_fd;
  pid_t m_child;
  pid_t m_sender = 0;
  std::size_t m_limit = message_limit_before_plan;
  std::string m_buffer;
  std::size_t m_start = 0;   ///< the first byte of the message being read
  std::size_t m_scanned = 0; ///< bytes before this hold no line end
};

/// Whether `pid` is `ancestor` or descends from it within `depth` generations (/proc/PID/stat).
[[nodiscard]] bool descends_from(pid_t pid, pid_t ancestor, int depth);

} // namespace prereg::detail
