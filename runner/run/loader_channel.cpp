// The channel and watchdog of a loader (loader_channel.hpp).
#include "run/loader_channel.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

namespace prereg::detail {

loader_channel::loader_channel(const protocol &p, const std::function<void(int fd)> &body)
    : m_limit_s(p.measurement.call_timeout()), m_bound(silence_limit_s(m_limit_s), calls_bound(p)) {
  channel_ends ends = open_channel();
  watch_page *page = &m_page.page();
  m_pid = fork_child([&] {
    ends.parent.reset();
    watch_attach(page);
    body(ends.child.get());
    std::_Exit(0);
  });
  m_fd = std::move(ends.parent);
}

loader_channel::~loader_channel() {
  if (m_pid > 0)
    kill_and_reap();
}

void loader_channel::kill_and_reap() {
  ::kill(m_pid, SIGKILL);
  m_status = wait_for(m_pid);
  m_pid = -1;
}

std::vector<std::string> loader_channel::read_all_lines(
    const std::function<std::string(const watched_call_state &)> &stuck) {
  channel_reader reader(m_fd.get(), m_pid, "the process that loads outside code", "");
  std::vector<std::string> lines;
  const auto between = [&] {
    const auto call = call_in_progress(m_page.page());
    if (call && static_cast<double>(monotonic_ns() - call->started_ns) / 1e9 > m_limit_s) {
      const std::string line = stuck(*call);
      kill_and_reap(); // with it its PID namespace, and everything outside code started there
      throw invalid_input(line);
    }
    if (const std::string why = m_bound.check(m_page.page()); !why.empty()) {
      kill_and_reap();
      throw invalid_input(fmt::format("the process that loads outside code {}; it was killed "
                                      "(docs/engine.md, \"The parent's bounds\")",
                                      why));
    }
  };
  while (auto line = reader.next(between)) {
    m_bound.heard();
    lines.push_back(std::move(*line));
  }
  if (reader.pending())
    throw io_error("the process that loads outside code ended a message without a line end");
  m_fd.reset();
  m_status = wait_for(m_pid);
  m_pid = -1;
  return lines;
}

} // namespace prereg::detail
