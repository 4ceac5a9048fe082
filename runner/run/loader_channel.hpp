// The channel of a process that loads outside code before anything is stored (the loaders of
// `check`, `canon` and `freeze`: run/arm_check.hpp, run/operation_check.hpp): the measuring
// process's channel (run/channel.hpp: every chunk's sender named, a message bounded, bytes
// scanned once), its watchdog (run/watchdog.hpp: each call of outside code announced on a
// shared page, a call past the protocol's limit ends the loader) and the parent's own bounds
// (run/parent_bound.hpp). docs/engine.md, "The watchdog". Internal to runner/run.
#pragma once

#include "base/process.hpp"
#include "base/watch.hpp"
#include "run/channel.hpp"
#include "run/parent_bound.hpp"
#include "spec/protocol.hpp"

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace prereg::detail {

/// A forked loader as its parent holds it.
class loader_channel {
public:
  /// Forks `body`, which gets the child's end of the channel after it has attached the watch
  /// page (every watched_call in it is seen by the parent). The longest a call of outside code
  /// may take is `p`'s measurement.call_timeout_s; the parent's bounds are `p`'s.
  loader_channel(const protocol &p, const std::function<void(int fd)> &body);
  ~loader_channel();
  loader_channel(const loader_channel &) = delete;
  loader_channel &operator=(const loader_channel &) = delete;

  /// Every line the loader sends until it closes the channel, then the loader reaped. A call
  /// that has run longer than the limit kills the loader (and its PID namespace) and throws
  /// invalid_input (exit 2) with stuck(call) as its line, and so does a loader past the
  /// parent's bounds (the line names them); bytes from another process or a
  /// message over the channel's bound throw io_error (exit 1).
  [[nodiscard]] std::vector<std::string>
  read_all_lines(const std::function<std::string(const watched_call_state &)> &stuck);
  [[nodiscard]] pid_t pid() const { return m_pid; }
  /// How the loader ended (after read_all_lines).
  [[nodiscard]] const wait_status &status() const { return m_status; }

private:
  void kill_and_reap();

  double m_limit_s;
  parent_bound m_bound;
  shared_watch_page m_page;
  unique_fd m_fd;
  pid_t m_pid = -1;
  wait_status m_status{};
};

} // namespace prereg::detail
