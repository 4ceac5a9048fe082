// The strict YAML tree of a JSON value (strict_yaml::from_json): what lets a frozen protocol's
// JSON be validated by the same code as its YAML, with JSON pointers as `where`.
#include "base/yaml_strict.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace prereg::strict_yaml {
namespace {

std::string pointer_token(const std::string &key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

node from_json_at(const json &value, const std::string &where, const std::string &pointer,
                  std::size_t depth) {
  if (depth > max_depth)
    throw invalid_input(fmt::format("nesting deeper than {} levels", max_depth),
                        where + "#" + pointer);
  node n;
  n.where = where + "#" + pointer;
  switch (value.type()) {
  case json::value_t::null:
    n.k = node::kind::null;
    break;
  case json::value_t::object:
    n.k = node::kind::mapping;
    for (const auto &[key, item] : value.items()) {
      node k;
      k.k = node::kind::scalar;
      k.style = scalar_style::quoted;
      k.value = key;
      k.where = n.where;
      n.entries.emplace_back(
          std::move(k), from_json_at(item, where, pointer + "/" + pointer_token(key), depth + 1));
    }
    break;
  case json::value_t::array: {
    n.k = node::kind::sequence;
    std::size_t index = 0;
    for (const auto &item : value)
      n.items.push_back(
          from_json_at(item, where, pointer + "/" + std::to_string(index++), depth + 1));
    break;
  }
  case json::value_t::string:
    n.k = node::kind::scalar;
    n.style = scalar_style::quoted;
    n.value = value.get<std::string>();
    break;
  case json::value_t::boolean:
    n.k = node::kind::scalar;
    n.value = value.get<bool>() ? "true" : "false";
    break;
  case json::value_t::number_integer:
    n.k = node::kind::scalar;
    n.value = std::to_string(value.get<std::int64_t>());
    break;
  case json::value_t::number_unsigned:
    n.k = node::kind::scalar;
    n.value = std::to_string(value.get<std::uint64_t>());
    break;
  case json::value_t::number_float: {
    n.k = node::kind::scalar;
    n.value = fmt::format("{}", value.get<double>()); // shortest round-trip digits
    if (n.value.find_first_of(".eEni") == std::string::npos)
      n.value += ".0";
    break;
  }
  default:
    throw invalid_input("unsupported JSON value", n.where);
  }
  return n;
}

} // namespace

node from_json(const json &value, const std::string &where) {
  return from_json_at(value, where, "", 0);
}

} // namespace prereg::strict_yaml
