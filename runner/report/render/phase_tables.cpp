// Where a run's time went (phase_tables.hpp).
#include "report/render/phase_tables.hpp"

#include <fmt/format.h>

#include <cmath>

namespace prereg::render {
namespace {

double part_ms(const report_phases &p, std::string_view name) {
  for (const auto &t : p.timing)
    if (t.name == name)
      return t.ms;
  return 0;
}

std::string seconds_text(double ms) { return fmt::format("{:.3f} s", ms / 1000.0); }

std::string share_text(double ms, double wall_ms) {
  return wall_ms > 0 ? fmt::format("{:.1f}%", 100.0 * ms / wall_ms) : std::string("n/a");
}

} // namespace

bool has_phases(const view &v) { return v.renderer >= 5 && v.report->phases.has_value(); }

std::string phases_line(const view &v) {
  const report_phases &p = *v.report->phases;
  double first_calls = 0;
  for (const auto &c : v.report->cells)
    if (c.first_call_ms && std::isfinite(*c.first_call_ms))
      first_calls += *c.first_call_ms;
  const double work = part_ms(p, "timed windows") + part_ms(p, "warm-up windows") + first_calls;
  const double goal = 3 * work + 10000.0;
  return fmt::format("The run took {} from its start to its report. Its measured work — timed "
                     "windows {}, warm-up windows {}, the arms' first calls (set-up, compile) {} "
                     "— is {}; 3 x that + 10 s is {}: {}.",
                     seconds_text(p.wall_ms), seconds_text(part_ms(p, "timed windows")),
                     seconds_text(part_ms(p, "warm-up windows")), seconds_text(first_calls),
                     seconds_text(work), seconds_text(goal),
                     p.wall_ms <= goal ? "within it" : "over it");
}

table phases_table(const view &v) {
  const report_phases &p = *v.report->phases;
  table t{{plain("phase"), plain("wall"), plain("share")}, {false, true, true}, {}, true, "phases"};
  for (const auto &ph : p.list) {
    t.rows.push_back(
        {plain(ph.name), plain(seconds_text(ph.ms)), plain(share_text(ph.ms, p.wall_ms))});
    if (ph.name != "timing" || p.timing.empty())
      continue;
    double parts = 0;
    for (const auto &part : p.timing) {
      parts += part.ms;
      t.rows.push_back({plain("  " + part.name), plain(seconds_text(part.ms)),
                        plain(share_text(part.ms, p.wall_ms))});
    }
    const double other = std::max(0.0, ph.ms - parts);
    t.rows.push_back({plain("  other timing work"), plain(seconds_text(other)),
                      plain(share_text(other, p.wall_ms))});
  }
  t.rows.push_back({plain("wall time"), plain(seconds_text(p.wall_ms)), plain("100.0%")});
  return t;
}

} // namespace prereg::render
