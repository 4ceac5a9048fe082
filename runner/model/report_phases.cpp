// The phases' arithmetic the audit checks (report_model.hpp, docs/audit.md).
#include "model/report_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace prereg {
namespace {

std::string bad_time(const std::vector<phase_time> &list, const char *what) {
  for (const auto &p : list)
    if (!std::isfinite(p.ms) || p.ms < 0)
      return fmt::format("{} \"{}\" has {} ms", what, p.name, p.ms);
  return "";
}

double sum_of(const std::vector<phase_time> &list) {
  double s = 0;
  for (const auto &p : list)
    s += p.ms;
  return s;
}

} // namespace

std::string phases_problem(const report_phases &p) {
  if (!std::isfinite(p.wall_ms) || p.wall_ms < 0)
    return fmt::format("the wall time is {} ms", p.wall_ms);
  if (std::string why = bad_time(p.list, "phase"); !why.empty())
    return why;
  if (std::string why = bad_time(p.timing, "timing part"); !why.empty())
    return why;
  const double margin = std::max(phases_margin_floor_ms, phases_margin_share * p.wall_ms);
  const double sum = sum_of(p.list);
  if (std::fabs(sum - p.wall_ms) > margin)
    return fmt::format("the phases add up to {:.3f} ms, the wall time is {:.3f} ms (margin "
                       "{:.3f} ms)",
                       sum, p.wall_ms, margin);
  if (p.timing.empty())
    return "";
  const auto timing = std::find_if(p.list.begin(), p.list.end(),
                                   [](const phase_time &t) { return t.name == "timing"; });
  if (timing == p.list.end())
    return "timing parts are recorded without a timing phase";
  const double parts = sum_of(p.timing);
  if (parts > timing->ms + margin)
    return fmt::format("the timing parts add up to {:.3f} ms, more than the timing phase's "
                       "{:.3f} ms (margin {:.3f} ms)",
                       parts, timing->ms, margin);
  return "";
}

} // namespace prereg
