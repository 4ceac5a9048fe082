// The protocol body (the normalised protocol) read tolerantly for the pages.
#include "report/render/body.hpp"

#include "report/render/format.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace prereg::render {

const json &null_json() {
  static const json j;
  return j;
}

const json &child(const json &obj, std::string_view key) {
  if (!obj.is_object())
    return null_json();
  const auto it = obj.find(key);
  return it == obj.end() ? null_json() : *it;
}

const json &extents(const json &body) {
  return child(body, child(body, "axes").is_object() ? "axes" : "shapes");
}

std::optional<double> number(const json &obj, std::string_view key) {
  const json &v = child(obj, key);
  if (!v.is_number())
    return std::nullopt;
  const double d = v.get<double>();
  return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
}

std::optional<std::int64_t> integer(const json &obj, std::string_view key) {
  const json &v = child(obj, key);
  if (v.is_number_integer())
    return v.get<std::int64_t>();
  return std::nullopt;
}

std::string text(const json &obj, std::string_view key, std::string fallback) {
  const json &v = child(obj, key);
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_null())
    return fallback;
  return value_text(v);
}

std::string value_text(const json &v) {
  switch (v.type()) {
  case json::value_t::null:
    return "null";
  case json::value_t::boolean:
    return v.get<bool>() ? "true" : "false";
  case json::value_t::number_integer:
    return fmt::format("{}", v.get<std::int64_t>());
  case json::value_t::number_unsigned:
    return fmt::format("{}", v.get<std::uint64_t>());
  case json::value_t::number_float:
    return fmt::format("{:.6g}", v.get<double>());
  case json::value_t::string:
    return v.get<std::string>();
  case json::value_t::array: {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i)
      out += (i ? ", " : "") + value_text(v[i]);
    return out + "]";
  }
  case json::value_t::object: {
    std::string out;
    for (const auto &[k, x] : v.items())
      out += (out.empty() ? "" : ", ") + k + "=" + value_text(x);
    return "{" + out + "}";
  }
  default:
    return "?";
  }
}

std::string list_text(const json &list) {
  if (!list.is_array())
    return value_text(list);
  std::vector<std::string> items;
  for (const json &x : list)
    items.push_back(x.is_string() ? x.get<std::string>() : value_text(x));
  return join(items, ", ");
}

} // namespace prereg::render
