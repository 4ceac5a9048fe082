// The scheduling record's JSON (sched.hpp).
#include "spec/sched.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace prereg {

json sched_json(const std::vector<sched_sample> &sched) {
  json wall = json::array(), delay = json::array(), stops = json::array();
  for (const auto &s : sched) {
    wall.push_back(s.wall_ms);
    delay.push_back(finite_or_null(s.run_delay_ms));
    stops.push_back(s.stops);
  }
  return {{"wall_ms", std::move(wall)},
          {"run_delay_ms", std::move(delay)},
          {"stops", std::move(stops)}};
}

std::string read_sched_json(const json &j, std::size_t samples, std::vector<sched_sample> &out) {
  if (!j.is_object() || j.size() != 3)
    return "is not {wall_ms, run_delay_ms, stops}";
  for (const char *name : {"wall_ms", "run_delay_ms", "stops"}) {
    const auto it = j.find(name);
    if (it == j.end() || !it->is_array())
      return fmt::format("has no array {}", name);
    if (it->size() != samples)
      return fmt::format("{} has {} values for {} samples", name, it->size(), samples);
  }
  out.assign(samples, sched_sample{});
  for (std::size_t i = 0; i < samples; ++i) {
    const json &wall = j["wall_ms"][i], &delay = j["run_delay_ms"][i], &stops = j["stops"][i];
    if (!wall.is_number() || !std::isfinite(wall.get<double>()) || wall.get<double>() < 0)
      return fmt::format("wall_ms[{}] is not a finite non-negative number", i);
    out[i].wall_ms = wall.get<double>();
    if (delay.is_null())
      out[i].run_delay_ms = std::numeric_limits<double>::quiet_NaN();
    else if (delay.is_number() && std::isfinite(delay.get<double>()) && delay.get<double>() >= 0)
      out[i].run_delay_ms = delay.get<double>();
    else
      return fmt::format("run_delay_ms[{}] is not a finite non-negative number or null", i);
    if (!stops.is_number_unsigned() &&
        !(stops.is_number_integer() && stops.get<std::int64_t>() >= 0))
      return fmt::format("stops[{}] is not a non-negative integer", i);
    out[i].stops = stops.get<std::int64_t>();
  }
  return "";
}

} // namespace prereg
