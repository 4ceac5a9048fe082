// The parent's own bounds on a forked process that runs outside code (docs/engine.md, "The
// parent's bounds"): kept on the parent's clock from what the parent heard on the channel and saw
// on the watch page, so that code inside the process, which can write its page and its channel,
// cannot stretch them past what the protocol's calls may take. The watchdog's limit on one call
// (run/watchdog.hpp) trusts the page's start time; these do not. Internal to runner/run.
#pragma once

#include "base/watch.hpp"
#include "spec/protocol.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace prereg::detail {

/// The longest the parent waits while the page shows no call and nothing arrives [s]:
/// PREREG_SILENCE_S (a number above 0, at most 86400: the tests' setting) when set, else the
/// larger of the call limit and 60 s. A bad value throws invalid_input ("the environment").
[[nodiscard]] double silence_limit_s(double call_limit_s);

/// The most outermost calls of outside code a process may announce for protocol `p` (loads,
/// setups, captures, correctness runs, references, warm-ups, samples and their spot checks,
/// teardowns) over every cell it can plan (arms x shapes x passes), twice over: more means the
/// page was written by other code.
[[nodiscard]] std::size_t calls_bound(const protocol &p);

class parent_bound {
public:
  /// Starts now. `silence_s`: silence_limit_s; `calls`: calls_bound.
  parent_bound(double silence_s, std::size_t calls);
  /// A whole message arrived, or the parent sent one the process waited for (its wait is not
  /// silence).
  void heard();
  /// "" while the process keeps within the bounds, else why it does not (the parent then
  /// kills it): a call announced with a start before the last one's or after now, more
  /// calls than `calls`, or no call shown and nothing heard for longer than `silence_s` while
  /// the parent listened (called at least every second: a longer gap restarts the count).
  [[nodiscard]] std::string check(const watch_page &page);
  [[nodiscard]] double silence_s() const { return m_silence_s; }

private:
  double m_silence_s;
  std::size_t m_calls_max;
  std::size_t m_calls_seen = 0;
  std::int64_t m_last_start = 0; ///< the start of the last call seen (the page's clock)
  std::int64_t m_quiet_since;    ///< when the parent last heard a message or saw a call
  std::int64_t m_last_check = 0; ///< when check last ran (0: never)
  /// A gap between two checks longer than this [ns] means the parent was not listening.
  static constexpr std::int64_t away_ns = 1'000'000'000;
};

} // namespace prereg::detail
