// One forked measuring process as the parent holds it (measuring_process.hpp).
#include "run/measuring_process.hpp"

#include "prereg/error.hpp"
#include "run/measuring_child.hpp"
#include "run/raw_json.hpp"

#include <fmt/format.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace prereg::detail {
namespace {

std::string describe_status(const wait_status &st) {
  if (st.signalled()) {
    const int sig = st.signal();
    const char *name = ::strsignal(sig);
    return fmt::format("was killed by signal {} ({})", sig, name != nullptr ? name : "?");
  }
  if (st.exited())
    return fmt::format("exited with status {} before sending its result", st.exit_code());
  return "ended abnormally";
}

struct process_setup {
  channel_ends channel;
  std::unique_ptr<shared_watch_page> page;
};

} // namespace

std::vector<std::unique_ptr<measuring_process>> measuring_process::fork_all(const run_options &o,
                                                                            const protocol &proto,
                                                                            std::uint64_t seed,
                                                                            std::size_t count) {
  std::vector<process_setup> setups;
  for (std::size_t i = 0; i < count; ++i)
    setups.push_back({open_channel(), std::make_unique<shared_watch_page>()});
  const pid_t parent = ::getpid();
  std::vector<pid_t> pids;
  for (std::size_t i = 0; i < count; ++i)
    pids.push_back(fork_child([&] {
      for (std::size_t j = 0; j < count; ++j) { // nothing of the other processes' channels
        ::close(setups[j].channel.parent.get());
        if (j != i)
          ::close(setups[j].channel.child.get());
      }
      run_measuring_child(o, proto, seed, parent, setups[i].channel.child.get(),
                          &setups[i].page->page());
    }));
  std::vector<std::unique_ptr<measuring_process>> out;
  for (std::size_t i = 0; i < count; ++i) {
    setups[i].channel.child.reset();
    out.push_back(std::make_unique<measuring_process>(pids[i], std::move(setups[i].channel.parent),
                                                      std::move(setups[i].page)));
  }
  return out;
}

measuring_process::measuring_process(pid_t pid, unique_fd channel,
                                     std::unique_ptr<shared_watch_page> page)
    : m_pid(pid), m_channel(std::move(channel)), m_page(std::move(page)),
      m_reader(m_channel.get(), pid) {}

measuring_process::~measuring_process() {
  m_channel.reset();
  if (m_pid > 0)
    kill();
}

void measuring_process::start(const std::map<std::string, std::string> &excluded) {
  const json msg = {{"start", {{"exclude", excluded}}}};
  if (!send(msg.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"))
    throw io_error(fmt::format("the measuring process (pid {}) is gone before it started", m_pid));
}

bool measuring_process::send(std::string_view bytes) const {
  return send_all(m_channel.get(), bytes);
}

std::optional<std::string> measuring_process::next_line(const channel_reader::check &between) {
  return m_reader.next(between);
}

std::string measuring_process::reap() {
  const wait_status st = wait_for(m_pid);
  m_pid = -1;
  return st.reaped ? describe_status(st) : "vanished";
}

void measuring_process::expect_clean_end() {
  const auto extra = m_reader.next([] {});
  if (extra)
    bad_result("message", "follows the result (one result per measuring process)");
  if (m_reader.pending())
    bad_result("message", "follows the result without a line end");
  const pid_t pid = m_pid;
  const wait_status st = wait_for(m_pid);
  m_pid = -1;
  if (!st.reaped || !st.exited() || st.exit_code() != 0)
    throw io_error(fmt::format("the measuring process (pid {}) {} after its result; the run failed",
                               pid, st.reaped ? describe_status(st) : "vanished"));
}

void measuring_process::kill() {
  if (m_pid <= 0)
    return;
  ::kill(m_pid, SIGKILL);
  for (int i = 0; i < 1000; ++i) {
    int status = 0;
    const pid_t r = ::waitpid(m_pid, &status, WNOHANG);
    if (r == m_pid || (r < 0 && errno == ECHILD))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  m_pid = -1;
}

} // namespace prereg::detail
