// The parent's own bounds (parent_bound.hpp).
#include "run/parent_bound.hpp"

#include "engine/measure.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace prereg::detail {

double silence_limit_s(double call_limit_s) {
  const char *v = std::getenv("PREREG_SILENCE_S");
  if (v == nullptr || *v == '\0')
    return std::max(call_limit_s, 60.0);
  char *end = nullptr;
  errno = 0;
  const double s = std::strtod(v, &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(s) || s <= 0 || s > 86400)
    throw invalid_input(fmt::format("PREREG_SILENCE_S is not a number of seconds above 0 and at "
                                    "most 86400: '{}'",
                                    message_excerpt(v)),
                        "the environment");
  return s;
}

std::size_t calls_bound(const protocol &p) {
  const std::size_t cells =
      p.arms.size() * p.shape_count() * std::max<std::size_t>(p.passes.size(), 1);
  const std::int64_t w = std::max<std::int64_t>(p.measurement.warmup, 0);
  const auto warmup = static_cast<std::size_t>(w > 0 ? w + warmup_settle_extra : 0);
  const auto samples =
      static_cast<std::size_t>(std::max<std::int64_t>(p.measurement.repetitions, 0));
  // Per cell: a setup, a capture, a teardown, a correctness run and two references; each
  // warm-up window (those a warm-up that does not settle adds included); each sample's window,
  // its spot check's reference and the check.
  const std::size_t per_cell = 8 + warmup + 3 * samples;
  return 2 * (16 + 4 * p.arms.size() + cells * per_cell);
}

parent_bound::parent_bound(double silence_s, std::size_t calls)
    : m_silence_s(silence_s), m_calls_max(calls), m_quiet_since(monotonic_ns()) {}

void parent_bound::heard() { m_quiet_since = monotonic_ns(); }

std::string parent_bound::check(const watch_page &page) {
  const auto call = call_in_progress(page);
  const std::int64_t now = monotonic_ns(); // after the page: an honest start is never later
  // The reader checks at least every 100 ms while it waits; a longer gap is the parent busy
  // elsewhere (the ledger, the store's lock, reading a burst), not listening: silence is
  // counted from its return.
  if (m_last_check != 0 && now - m_last_check > away_ns)
    m_quiet_since = now;
  m_last_check = now;
  if (call) {
    m_quiet_since = now;
    if (call->started_ns == m_last_start)
      return "";
    if (call->started_ns < m_last_start || call->started_ns > now)
      return fmt::format("announced a call that started {} the {} (its watch page was written "
                         "by other code)",
                         call->started_ns < m_last_start ? "before" : "after",
                         call->started_ns < m_last_start ? "previous call" : "parent's now");
    m_last_start = call->started_ns;
    if (++m_calls_seen > m_calls_max)
      return fmt::format("announced more calls of outside code than its plan can make ({}; its "
                         "watch page was written by other code)",
                         m_calls_max);
    return "";
  }
  const double quiet = static_cast<double>(now - m_quiet_since) / 1e9;
  if (quiet > m_silence_s)
    return fmt::format("showed no call of outside code and sent nothing for {:.0f} s (the "
                       "parent's silence limit: {:g} s)",
                       quiet, m_silence_s);
  return "";
}

} // namespace prereg::detail
