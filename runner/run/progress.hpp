// What a run shows and hears while it measures: progress on a terminal, and SIGINT/SIGTERM
// turned into an error at the next step (internal to runner/run).
#pragma once

#include "spec/records.hpp"

#include <signal.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace prereg::detail {

/// Installs SIGINT/SIGTERM handlers for the lifetime of a run; restores the old ones.
class signal_guard {
public:
  signal_guard();
  ~signal_guard();
  signal_guard(const signal_guard &) = delete;
  signal_guard &operator=(const signal_guard &) = delete;

private:
  struct sigaction m_old_int {};
  struct sigaction m_old_term {};
};

/// Throws "run interrupted by SIGINT|SIGTERM" (exit 1) once a guarded signal arrived.
void throw_if_signalled();

/// Progress on stderr when it is a terminal: the phase, its cells done/total, the run's elapsed
/// time and the phase's ETA (from the phase's own rate: the instrument's set-up and the
/// correctness gate do not inflate the timing phase's estimate); redrawn at least every
/// half second during long steps. Every event first checks for an interrupt.
class terminal_progress final : public progress_sink {
public:
  explicit terminal_progress(bool enabled) : m_enabled(enabled), m_start(clock::now()) {}
  ~terminal_progress() override;
  void phase(std::string_view name) override;
  void cell_done(std::size_t done, std::size_t total) override;
  void tick() override;

private:
  using clock = std::chrono::steady_clock;
  void draw();
  bool m_enabled;
  bool m_drawn = false;
  std::string m_phase = "start";
  std::size_t m_done = 0;
  std::size_t m_total = 0;
  clock::time_point m_start;
  clock::time_point m_phase_start = m_start;
  clock::time_point m_last_draw = m_start;
};

} // namespace prereg::detail
