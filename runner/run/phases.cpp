// A run's phases for its report (phases.hpp).
#include "run/phases.hpp"

#include <algorithm>
#include <cmath>

namespace prereg {
namespace {

/// `ms` rounded to a microsecond.
double to_us(double ms) { return std::round(ms * 1000.0) / 1000.0; }

} // namespace

report_phases make_report_phases(double start_ms, double measure_ms, const raw_run &raw,
                                 double analysis_ms, double wall_ms) {
  report_phases p;
  p.wall_ms = to_us(wall_ms);
  p.list.push_back({"start", to_us(start_ms)});
  double engine = 0;
  for (const auto &e : raw.phases) {
    p.list.push_back({e.name, to_us(e.ms)});
    engine += e.ms;
  }
  p.list.push_back({"measuring side", to_us(std::max(0.0, measure_ms - engine))});
  p.list.push_back({"analysis", to_us(analysis_ms)});
  for (const auto &t : raw.timing_parts)
    p.timing.push_back({t.name, to_us(t.ms)});
  return p;
}

} // namespace prereg
