// A run's progress on a terminal and its interrupt handling.
#include "run/progress.hpp"

#include "base/process.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <cstdio>

#include <unistd.h>

namespace prereg::detail {
namespace {

std::atomic<int> g_signal{0};

extern "C" void on_signal(int sig) { g_signal.store(sig); }

} // namespace

signal_guard::signal_guard() {
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &m_old_int);
  sigaction(SIGTERM, &sa, &m_old_term);
}

signal_guard::~signal_guard() {
  sigaction(SIGINT, &m_old_int, nullptr);
  sigaction(SIGTERM, &m_old_term, nullptr);
}

void throw_if_signalled() {
  if (const int sig = g_signal.load(); sig != 0)
    throw error(exit_code::failure,
                fmt::format("run interrupted by {}", sig == SIGINT ? "SIGINT" : "SIGTERM"));
}

terminal_progress::~terminal_progress() {
  if (m_enabled && m_drawn)
    (void)write_best_effort(STDERR_FILENO, "\n"); // a destructor: never throws
}

void terminal_progress::phase(std::string_view name) {
  throw_if_signalled();
  m_phase = name;
  m_phase_start = clock::now();
  m_done = m_total = 0;
  draw();
}

void terminal_progress::cell_done(std::size_t done, std::size_t total) {
  throw_if_signalled();
  m_done = done;
  m_total = total;
  draw();
}

void terminal_progress::tick() {
  throw_if_signalled();
  if (clock::now() - m_last_draw >= std::chrono::milliseconds(500))
    draw();
}

void terminal_progress::draw() {
  m_last_draw = clock::now();
  if (!m_enabled)
    return;
  const auto seconds = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const double elapsed = seconds(m_last_draw - m_start);
  std::string cells;
  if (m_total > 0) {
    cells = fmt::format("  cells {}/{}", m_done, m_total);
    if (m_done > 0 && m_total >= m_done)
      cells += fmt::format("  ETA {:.0f}s", seconds(m_last_draw - m_phase_start) /
                                                static_cast<double>(m_done) *
                                                static_cast<double>(m_total - m_done));
  }
  (void)write_best_effort(STDERR_FILENO, fmt::format("\r\033[K[{}]{}  elapsed {:.0f}s",
                                                     escape_control(m_phase), cells, elapsed));
  m_drawn = true;
}

} // namespace prereg::detail
