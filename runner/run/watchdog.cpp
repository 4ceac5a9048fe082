// The watchdog (watchdog.hpp).
#include "run/watchdog.hpp"

#include "engine/measure.hpp"
#include "prereg/error.hpp"
#include "run/raw_json.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg::detail {

watchdog::watchdog(const protocol &p) : m_limit_s(p.measurement.call_timeout()), m_proto(p) {}

std::size_t watchdog::spares_for(const protocol &p) {
  return std::min<std::size_t>(p.arms.size(), 4);
}

void watchdog::check(const watch_page &page) const {
  const auto call = call_in_progress(page);
  if (!call)
    return;
  const double waited = static_cast<double>(monotonic_ns() - call->started_ns) / 1e9;
  if (waited > m_limit_s)
    throw stuck_call(*call, waited);
}

std::string watchdog::exclude(const stuck_call &s, const std::vector<cell_key> &cells,
                              bool can_continue) {
  const auto phase = std::string(to_string(static_cast<call_phase>(s.call.what)));
  const bool has_arm =
      s.call.who >= 0 && static_cast<std::size_t>(s.call.who) < m_proto.arms.size();
  const bool has_cell = s.call.where >= 0 && static_cast<std::size_t>(s.call.where) < cells.size();
  const std::string arm = has_arm ? m_proto.arms[static_cast<std::size_t>(s.call.who)].id : "";
  const std::string at =
      has_cell ? fmt::format(" at {}", cell_label(cells[static_cast<std::size_t>(s.call.where)]))
               : "";
  m_stuck.push_back({arm,
                     has_cell ? to_json(cells[static_cast<std::size_t>(s.call.where)]) : json(),
                     phase, s.waited_s});
  const std::string what =
      fmt::format("{} of {}{} did not return within {:g} s (measurement.call_timeout_s)", phase,
                  has_arm ? "arm " + arm : "the measuring process", at, m_limit_s);
  if (!has_arm || m_excluded.contains(arm) || !can_continue)
    throw io_error(fmt::format("the watchdog: a {}; {}; the run failed", what,
                               !has_arm ? "it belongs to no arm that could be left out"
                               : m_excluded.contains(arm)
                                   ? "the arm was already left out"
                                   : "no fresh measuring process is left to go on without it"));
  m_excluded[arm] = fmt::format("watchdog: a {}; the measuring process was killed and the run "
                                "measured again in a fresh one without this arm",
                                what);
  return arm;
}

std::string watchdog::notice(const std::string &arm) const {
  return fmt::format("the watchdog: arm {} did not return from a call within {:g} s; the "
                     "measuring process was killed and the run goes on in a fresh one without it",
                     arm, m_limit_s);
}

void watchdog::check_excluded(const raw_run &raw) const {
  for (const auto &c : raw.cells) {
    const auto it = m_excluded.find(c.key.arm);
    if (it == m_excluded.end())
      continue;
    if (c.error != it->second || !c.samples_ms.empty())
      bad_result("raw.cells",
                 fmt::format("measured arm {}, which the watchdog left out", c.key.arm));
  }
  for (const auto &c : raw.correctness)
    if (m_excluded.contains(c.key.arm))
      bad_result("raw.correctness",
                 fmt::format("checks arm {}, which the watchdog left out", c.key.arm));
}

} // namespace prereg::detail
