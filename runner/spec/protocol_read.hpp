// The strict readers of a protocol's YAML nodes: typed scalars, lists, ids and mappings with
// their allowed keys; every refusal throws invalid_input at the offending node.
#pragma once

#include "base/yaml_strict.hpp"
#include "prereg/arm.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace prereg::protocol_detail {

using strict_yaml::node;

/// Throws invalid_input(`what`) at `n`.
[[noreturn]] void fail(const node &n, const std::string &what);

/// A string scalar; refuses a plain scalar some YAML reader takes for a number, boolean or null.
[[nodiscard]] std::string as_string(const node &n, std::string_view what);
/// as_string, and not empty or only whitespace.
[[nodiscard]] std::string as_nonempty_string(const node &n, std::string_view what);
/// A non-empty free-text field of at most `max_bytes` UTF-8 bytes (docs/protocol.md, limits).
[[nodiscard]] std::string as_text(const node &n, std::string_view what, std::size_t max_bytes);
/// A plain decimal integer in [lo, hi]: no sign other than '-', no leading zeros, no 0x/1e3/60.0.
[[nodiscard]] std::int64_t as_int(const node &n, std::string_view what, std::int64_t lo,
                                  std::int64_t hi);
/// A plain decimal number with optional fraction and exponent (1, 0.95, 1.0e-5, 1e-5).
[[nodiscard]] double as_float(const node &n, std::string_view what);
/// `true` or `false`, plain and lowercase.
[[nodiscard]] bool as_bool(const node &n, std::string_view what);
/// `fwd` or `fwd+bwd`.
[[nodiscard]] pass_kind as_pass(const node &n, std::string_view what);
/// A non-empty sequence of at most `max_items` items.
[[nodiscard]] const std::vector<node> &as_list(const node &n, std::string_view what,
                                               std::size_t max_items);
/// An arm or protocol id: [a-z0-9][a-z0-9_-]{0,63}.
[[nodiscard]] std::string as_id(const node &n, std::string_view what);
/// A prediction id: [A-Za-z0-9_.-]{1,64}.
[[nodiscard]] std::string as_prediction_id(const node &n, std::string_view what);

/// The scalar `n` as one of `values` (name, value), else a refusal listing the names.
template <typename E, typename Values>
E as_enum_of(const node &n, std::string_view what, const Values &values) {
  const std::string s = n.k == node::kind::scalar ? n.value : std::string();
  for (const auto &[name, value] : values)
    if (n.k == node::kind::scalar && s == name)
      return value;
  std::string allowed;
  for (const auto &[name, value] : values)
    allowed += (allowed.empty() ? "" : " | ") + std::string(name);
  fail(n, fmt::format("{} must be one of {}, got {}", what, allowed, strict_yaml::describe(n)));
}

/// as_enum_of over a braced list of (name, value) pairs.
template <typename E>
E as_enum(const node &n, std::string_view what,
          std::initializer_list<std::pair<std::string_view, E>> values) {
  return as_enum_of<E>(n, what, values);
}

/// `names` joined by `separator`.
[[nodiscard]] std::string joined(const std::vector<std::string> &names,
                                 std::string_view separator = ", ");

/// The key node of `key` in a mapping (for messages about the key itself), or null.
[[nodiscard]] const node *key_node(const node &map, std::string_view key);

/// A mapping whose keys are all in `allowed`; gives access to required and optional keys.
class fields {
public:
  fields(const node &map, std::string_view what, std::initializer_list<std::string_view> allowed)
      : fields(map, what, std::vector<std::string_view>(allowed)) {}
  fields(const node &map, std::string_view what, const std::vector<std::string_view> &allowed);

  [[nodiscard]] const node *optional(std::string_view key) const { return m_map.find(key); }
  /// The value under `key`; "missing required key" at the mapping when absent.
  [[nodiscard]] const node &required(std::string_view key) const;
  /// The dotted path of `key` in messages ("key" at the top, "what.key" below).
  [[nodiscard]] std::string path(std::string_view key) const;

private:
  const node &m_map;
  std::string m_what;
};

} // namespace prereg::protocol_detail
