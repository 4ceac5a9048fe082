// The device state's and the stop record's JSON (device_state.hpp).
#include "spec/device_state.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>
#include <utility>

namespace prereg {
namespace {

constexpr std::array<std::pair<std::uint64_t, const char *>, 5> throttle_names{{
    {0x4, "sw-power-cap"},
    {0x8, "hw-slowdown"},
    {0x20, "sw-thermal"},
    {0x40, "hw-thermal"},
    {0x80, "hw-power-brake"},
}};

constexpr std::array<const char *, 4> quantities{"sm_mhz", "mem_mhz", "power_w", "temp_c"};

double &member(device_state_sample &s, std::size_t q) {
  return q == 0 ? s.sm_mhz : q == 1 ? s.mem_mhz : q == 2 ? s.power_w : s.temp_c;
}

/// A number or null (NaN); false for anything else.
bool number_or_null(const json &v, double &out) {
  if (v.is_null()) {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (!v.is_number())
    return false;
  out = v.get<double>();
  return std::isfinite(out);
}

} // namespace

std::string throttle_reason_names(std::uint64_t reasons) {
  std::string out;
  for (const auto &[bit, name] : throttle_names)
    if ((reasons & bit) != 0) {
      if (!out.empty())
        out += '+';
      out += name;
    }
  return out;
}

json states_json(const std::vector<device_state_sample> &states) {
  json out = json::object();
  for (std::size_t q = 0; q < quantities.size(); ++q) {
    json values = json::array();
    for (auto s : states)
      values.push_back(finite_or_null(member(s, q)));
    out[quantities[q]] = std::move(values);
  }
  json reasons = json::array();
  for (const auto &s : states)
    reasons.push_back(s.reasons ? json(*s.reasons) : json(nullptr));
  out["reasons"] = std::move(reasons);
  return out;
}

std::string read_states_json(const json &j, std::size_t samples,
                             std::vector<device_state_sample> &out) {
  if (!j.is_object() || j.size() != quantities.size() + 1 || !j.contains("reasons"))
    return "is not {sm_mhz, mem_mhz, power_w, temp_c, reasons}";
  out.assign(samples, device_state_sample{});
  for (std::size_t q = 0; q <= quantities.size(); ++q) {
    const char *name = q < quantities.size() ? quantities[q] : "reasons";
    const auto it = j.find(name);
    if (it == j.end() || !it->is_array())
      return fmt::format("has no array {}", name);
    if (it->size() != samples)
      return fmt::format("{} has {} values for {} samples", name, it->size(), samples);
    for (std::size_t i = 0; i < samples; ++i) {
      const json &v = (*it)[i];
      if (q == quantities.size()) {
        if (v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0))
          out[i].reasons = v.get<std::uint64_t>();
        else if (!v.is_null())
          return fmt::format("reasons[{}] is not a non-negative integer or null", i);
      } else if (!number_or_null(v, member(out[i], q))) {
        return fmt::format("{}[{}] is not a finite number or null", name, i);
      }
    }
  }
  return "";
}

json stop_json(const stop_record &s) {
  return {{"reason", s.reason},
          {"rel_ci", finite_or_null(s.rel_ci)},
          {"ci_lo_ms", finite_or_null(s.ci_lo_ms)},
          {"ci_hi_ms", finite_or_null(s.ci_hi_ms)},
          {"seconds", s.seconds}};
}

std::string read_stop_json(const json &j, stop_record &out) {
  if (!j.is_object() || j.size() != 5)
    return "is not {reason, rel_ci, ci_lo_ms, ci_hi_ms, seconds}";
  const auto reason = j.find("reason");
  if (reason == j.end() || !reason->is_string())
    return "has no string reason";
  out.reason = reason->get<std::string>();
  if (out.reason != "precision" && out.reason != "max" && out.reason != "max_seconds" &&
      out.reason != "error")
    return fmt::format("reason is '{}', not precision, max, max_seconds or error", out.reason);
  const std::array<std::pair<const char *, double *>, 4> numbers{{{"rel_ci", &out.rel_ci},
                                                                  {"ci_lo_ms", &out.ci_lo_ms},
                                                                  {"ci_hi_ms", &out.ci_hi_ms},
                                                                  {"seconds", &out.seconds}}};
  for (const auto &[name, into] : numbers) {
    const auto it = j.find(name);
    if (it == j.end() || !number_or_null(*it, *into))
      return fmt::format("{} is not a finite number or null", name);
  }
  if (!(out.seconds >= 0))
    return "seconds is not a non-negative number";
  return "";
}

} // namespace prereg
