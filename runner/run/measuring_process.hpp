// One forked measuring process as the parent holds it (docs/engine.md, "The measuring
// process"): its pid, its channel and its watch page. Forked before the key is loaded; it waits
// for its start message, so spares can be forked ahead and started when the watchdog needs a
// fresh process. Internal to runner/run.
#pragma once

#include "base/watch.hpp"
#include "run/channel.hpp"
#include "run/run.hpp"
#include "spec/protocol.hpp"

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace prereg::detail {

class measuring_process {
public:
  /// Forks `count` measuring processes for `o`, `proto` and plan seed `seed`, each with its
  /// own channel and watch page; each closes every descriptor of the others.
  [[nodiscard]] static std::vector<std::unique_ptr<measuring_process>>
  fork_all(const run_options &o, const protocol &proto, std::uint64_t seed, std::size_t count);
  measuring_process(pid_t pid, unique_fd channel, std::unique_ptr<shared_watch_page> page);
  /// Kills and reaps the process if it is still there.
  ~measuring_process();
  measuring_process(const measuring_process &) = delete;
  measuring_process &operator=(const measuring_process &) = delete;

  /// Sends the start message: {start: {exclude: {arm id: reason}}} (run_plan::excluded).
  void start(const std::map<std::string, std::string> &excluded);
  /// Writes `bytes` to the process; false if it is gone.
  [[nodiscard]] bool send(std::string_view bytes) const;
  /// The next line from the process (channel_reader::next).
  [[nodiscard]] std::optional<std::string> next_line(const channel_reader::check &between);
  void set_limit(std::size_t bytes) { m_reader.set_limit(bytes); }
  [[nodiscard]] const watch_page &page() const { return m_page->page(); }
  [[nodiscard]] pid_t pid() const { return m_pid; }
  /// After end of file: waits for the process and says how it ended.
  [[nodiscard]] std::string reap();
  /// After the result: nothing more on the channel, and the process ends with status 0. A
  /// second result, bytes after it or a process that ends otherwise fails the run.
  void expect_clean_end();
  /// SIGKILL, and a wait of at most 10 s for it to be reaped (a process stuck in a driver may
  /// take a moment; one that never goes is left).
  void kill();

private:
  pid_t m_pid;
  unique_fd m_channel;
  std::unique_ptr<shared_watch_page> m_page;
  channel_reader m_reader;
};

} // namespace prereg::detail
