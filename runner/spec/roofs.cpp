// The roofs' JSON and derived rates (roofs.hpp).
#include "spec/roofs.hpp"

#include "base/stats.hpp"
#include "spec/bytes_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace prereg {
namespace {

constexpr std::string_view unknown_prefix = "unknown: ";

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

/// A rate as a message shows it: the shortest form that reads back the same double, or null.
std::string shown(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

json stream_json(const stream_roof &r) {
  return {{"method", r.method},
          {"bytes", r.bytes},
          {"samples_ms", r.samples_ms},
          {"gbps", finite_or_null(r.gbps)}};
}

json compute_json(const compute_roof &r) {
  if (!r.unknown.empty())
    return std::string(unknown_prefix) + r.unknown;
  return {{"method", r.method},
          {"shape", r.shape},
          {"flops", r.flops},
          {"samples_ms", r.samples_ms},
          {"tflops", finite_or_null(r.tflops)}};
}

/// Reads an object of exactly `keys`; "" or what is wrong.
std::string exact_keys(const json &j, std::initializer_list<const char *> keys) {
  if (!j.is_object())
    return "is not an object";
  for (const char *k : keys)
    if (!j.contains(k))
      return fmt::format("has no {}", k);
  if (j.size() != keys.size())
    for (const auto &[k, _] : j.items())
      if (std::find_if(keys.begin(), keys.end(), [&](const char *x) { return k == x; }) ==
          keys.end())
        return fmt::format("has the unknown member {}", k);
  return "";
}

std::string read_string(const json &j, const char *key, std::string &out) {
  if (!j[key].is_string())
    return fmt::format("{} is not a string", key);
  out = j[key].get<std::string>();
  return "";
}

std::string read_count(const json &j, const char *key, std::uint64_t &out) {
  const json &v = j[key];
  if (v.is_number_unsigned())
    out = v.get<std::uint64_t>();
  else if (v.is_number_integer() && v.get<std::int64_t>() >= 0)
    out = static_cast<std::uint64_t>(v.get<std::int64_t>());
  else if (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() < 1.8e19 &&
           std::floor(v.get<double>()) == v.get<double>())
    out = static_cast<std::uint64_t>(v.get<double>());
  else
    return fmt::format("{} is not a count", key);
  return "";
}

std::string read_samples(const json &j, std::vector<double> &out) {
  const json &v = j["samples_ms"];
  if (!v.is_array())
    return "samples_ms is not a list";
  out.clear();
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number() || !std::isfinite(v[i].get<double>()) || v[i].get<double>() < 0)
      return fmt::format("samples_ms[{}] is not a finite, non-negative number", i);
    out.push_back(v[i].get<double>());
  }
  return "";
}

std::string read_rate(const json &j, const char *key, double &out) {
  const json &v = j[key];
  if (v.is_null()) {
    out = std::numeric_limits<double>::quiet_NaN();
    return "";
  }
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    return fmt::format("{} is not a finite number or null", key);
  out = v.get<double>();
  return "";
}

std::string read_stream(const json &j, stream_roof &out) {
  if (const std::string bad = exact_keys(j, {"method", "bytes", "samples_ms", "gbps"});
      !bad.empty())
    return bad;
  for (const std::string &bad :
       {read_string(j, "method", out.method), read_count(j, "bytes", out.bytes),
        read_samples(j, out.samples_ms), read_rate(j, "gbps", out.gbps)})
    if (!bad.empty())
      return bad;
  return "";
}

std::string read_compute(const json &j, compute_roof &out) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s.rfind(unknown_prefix, 0) != 0 || s.size() == unknown_prefix.size())
      return "is a string that is not \"unknown: WHY\"";
    out.unknown = s.substr(unknown_prefix.size());
    return "";
  }
  if (const std::string bad = exact_keys(j, {"method", "shape", "flops", "samples_ms", "tflops"});
      !bad.empty())
    return bad;
  for (const std::string &bad :
       {read_string(j, "method", out.method), read_string(j, "shape", out.shape),
        read_count(j, "flops", out.flops), read_samples(j, out.samples_ms),
        read_rate(j, "tflops", out.tflops)})
    if (!bad.empty())
      return bad;
  return "";
}

} // namespace

double stream_roof_gbps(const stream_roof &r) {
  if (r.samples_ms.empty())
    return std::numeric_limits<double>::quiet_NaN();
  return gbps(r.bytes, median(r.samples_ms));
}

double compute_roof_tflops(const compute_roof &r) {
  if (!r.unknown.empty() || r.samples_ms.empty())
    return std::numeric_limits<double>::quiet_NaN();
  return tflops(r.flops, median(r.samples_ms));
}

void derive_roofs(roofs_record &r) {
  r.read.gbps = stream_roof_gbps(r.read);
  r.write.gbps = stream_roof_gbps(r.write);
  for (auto &[type, c] : r.compute)
    c.tflops = compute_roof_tflops(c);
}

json roofs_json(const roofs_record &r) {
  json compute = json::object();
  for (const auto &[type, c] : r.compute)
    compute[type] = compute_json(c);
  return {{"read", stream_json(r.read)}, {"write", stream_json(r.write)}, {"compute", compute}};
}

std::string read_roofs_json(const json &j, roofs_record &out) {
  if (const std::string bad = exact_keys(j, {"read", "write", "compute"}); !bad.empty())
    return bad;
  if (const std::string bad = read_stream(j["read"], out.read); !bad.empty())
    return "read " + bad;
  if (const std::string bad = read_stream(j["write"], out.write); !bad.empty())
    return "write " + bad;
  if (!j["compute"].is_object())
    return "compute is not an object";
  out.compute.clear();
  for (const auto &[type, entry] : j["compute"].items()) {
    if (type.empty() || type.size() > 16)
      return fmt::format("compute has the key '{}', not an element type's name", type);
    if (const std::string bad = read_compute(entry, out.compute[type]); !bad.empty())
      return fmt::format("compute.{} {}", type, bad);
  }
  return "";
}

std::string roofs_problem(const roofs_record &r) {
  for (const auto &[name, s] : {std::pair{"read", &r.read}, std::pair{"write", &r.write}})
    if (const double g = stream_roof_gbps(*s); !same(g, s->gbps))
      return fmt::format("instrument.roofs.{}.gbps is {} in the report, its samples give {}", name,
                         shown(s->gbps), shown(g));
  for (const auto &[type, c] : r.compute)
    if (const double t = compute_roof_tflops(c); !same(t, c.tflops))
      return fmt::format("instrument.roofs.compute.{}.tflops is {} in the report, its samples "
                         "give {}",
                         type, shown(c.tflops), shown(t));
  return "";
}

} // namespace prereg
