// The watchdog (docs/engine.md, "The watchdog"): the parent's limit on one call of arm code in
// the measuring process, read from the process's watch page; a call past it names the arm whose
// cells then fail, and the run goes on in a fresh measuring process without that arm.
// Internal to runner/run.
#pragma once

#include "base/json.hpp"
#include "base/watch.hpp"
#include "model/report_model.hpp"
#include "spec/protocol.hpp"
#include "spec/records.hpp"

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace prereg::detail {

/// A call of arm code past the limit: thrown by watchdog::check, caught by the measuring side.
struct stuck_call : std::runtime_error {
  stuck_call(watched_call_state s, double waited)
      : std::runtime_error("a call did not return"), call(s), waited_s(waited) {}
  watched_call_state call;
  double waited_s;
};

class watchdog {
public:
  explicit watchdog(const protocol &p);
  /// The fresh measuring processes forked ahead for a run of `p`: one per arm, at most 4.
  [[nodiscard]] static std::size_t spares_for(const protocol &p);
  /// Throws stuck_call when the call in progress on `page` started longer ago than the limit.
  void check(const watch_page &page) const;
  /// Records `s` and excludes its arm; returns the arm's id. Throws io_error (the run fails)
  /// when the call names no arm of the protocol, its arm is excluded already, or
  /// `can_continue` is false (no spare left).
  std::string exclude(const stuck_call &s, const std::vector<cell_key> &cells, bool can_continue);
  /// The excluded arms: id -> the error their cells carry.
  [[nodiscard]] const std::map<std::string, std::string> &excluded() const { return m_excluded; }
  /// The notice printed when arm `arm` was excluded.
  [[nodiscard]] std::string notice(const std::string &arm) const;
  /// Each cell of an excluded arm in `raw` carries its error and nothing measured, else the
  /// result is invalid (bad_result).
  void check_excluded(const raw_run &raw) const;
  /// The limit and the calls stopped (report run.watchdog).
  [[nodiscard]] report_watchdog record() const { return {m_limit_s, m_stuck}; }

private:
  double m_limit_s;
  const protocol &m_proto;
  std::map<std::string, std::string> m_excluded;
  std::vector<report_stuck_call> m_stuck;
};

} // namespace prereg::detail
