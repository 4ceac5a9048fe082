// The strict readers of a protocol's YAML nodes (protocol_read.hpp).
#include "spec/protocol_read.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace prereg::protocol_detail {

using strict_yaml::scalar_style;

namespace {

// Plain scalars that some YAML reader (1.1 or 1.2) resolves to null, a boolean or a number.
bool is_ambiguous_plain(const std::string &v) {
  static const std::set<std::string> words{
      "~",     "null",  "Null",  "NULL",  "true",  "True", "TRUE", "false", "False", "FALSE",
      "yes",   "Yes",   "YES",   "no",    "No",    "NO",   "on",   "On",    "ON",    "off",
      "Off",   "OFF",   "y",     "Y",     "n",     "N",    ".inf", ".Inf",  ".INF",  "-.inf",
      "-.Inf", "-.INF", "+.inf", "+.Inf", "+.INF", ".nan", ".NaN", ".NAN"};
  if (words.count(v) != 0)
    return true;
  // Anything starting like a number: [+-]? (digit | .digit); covers 0x, 0o, 1_000, 1:30, 1e3.
  std::size_t i = (v.starts_with('+') || v.starts_with('-')) ? 1 : 0;
  if (i < v.size() && v[i] == '.')
    ++i;
  return i < v.size() && v[i] >= '0' && v[i] <= '9';
}

bool id_char(char c, bool upper_and_dot) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         (upper_and_dot && ((c >= 'A' && c <= 'Z') || c == '.'));
}

} // namespace

[[noreturn]] void fail(const node &n, const std::string &what) {
  throw invalid_input(what, n.where);
}

std::string as_string(const node &n, std::string_view what) {
  if (n.k != node::kind::scalar)
    fail(n, fmt::format("{} must be a string, got {}", what, strict_yaml::describe(n)));
  if (n.style == scalar_style::plain && is_ambiguous_plain(n.value))
    fail(n, fmt::format("{} must be a string, got the plain scalar '{}' which YAML may read as "
                        "a number, boolean or null: quote it",
                        what, message_excerpt(n.value)));
  return n.value;
}

std::string as_nonempty_string(const node &n, std::string_view what) {
  auto s = as_string(n, what);
  if (s.find_first_not_of(" \t\n") == std::string::npos)
    fail(n, fmt::format("{} must not be empty", what));
  return s;
}

std::string as_text(const node &n, std::string_view what, std::size_t max_bytes) {
  auto s = as_nonempty_string(n, what);
  if (s.size() > max_bytes)
    fail(n, fmt::format("{} is {} bytes long; the limit is {} bytes", what, s.size(), max_bytes));
  return s;
}

std::int64_t as_int(const node &n, std::string_view what, std::int64_t lo, std::int64_t hi) {
  const auto range = [&] { return fmt::format("an integer from {} to {}", lo, hi); };
  if (n.k != node::kind::scalar)
    fail(n, fmt::format("{} must be {}, got {}", what, range(), strict_yaml::describe(n)));
  if (n.style != scalar_style::plain)
    fail(n, fmt::format("{} must be {}, got the quoted string \"{}\"", what, range(),
                        message_excerpt(n.value)));
  const std::string &v = n.value;
  const std::size_t digits = v.starts_with('-') ? 1 : 0;
  const bool decimal =
      v.size() > digits &&
      std::all_of(v.begin() + digits, v.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      !(v[digits] == '0' && v.size() > digits + 1);
  if (!decimal)
    fail(n, fmt::format("{} must be {} written in plain decimal, got '{}'", what, range(),
                        message_excerpt(v)));
  std::int64_t out = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || out < lo || out > hi)
    fail(n, fmt::format("{} must be {}, got {}", what, range(), message_excerpt(v)));
  return out;
}

double as_float(const node &n, std::string_view what) {
  if (n.k != node::kind::scalar)
    fail(n, fmt::format("{} must be a number, got {}", what, strict_yaml::describe(n)));
  if (n.style != scalar_style::plain)
    fail(n, fmt::format("{} must be a number, got the quoted string \"{}\"", what,
                        message_excerpt(n.value)));
  const std::string &v = n.value;
  std::size_t i = v.starts_with('-') ? 1 : 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9')
      ++i;
    return i - start;
  };
  bool ok = digits() > 0;
  if (ok && i < v.size() && v[i] == '.') {
    ++i;
    ok = digits() > 0;
  }
  if (ok && i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    if (i < v.size() && (v[i] == '+' || v[i] == '-'))
      ++i;
    ok = digits() > 0;
  }
  if (!ok || i != v.size())
    fail(n, fmt::format("{} must be a plain decimal number (like 0.95 or 1e-5), got '{}'", what,
                        message_excerpt(v)));
  double out = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || !std::isfinite(out))
    fail(n, fmt::format("{} is out of range: {}", what, message_excerpt(v)));
  return out;
}

bool as_bool(const node &n, std::string_view what) {
  if (n.k == node::kind::scalar && n.style == scalar_style::plain) {
    if (n.value == "true")
      return true;
    if (n.value == "false")
      return false;
  }
  fail(n, fmt::format("{} must be true or false (plain, lowercase), got {}", what,
                      strict_yaml::describe(n)));
}

pass_kind as_pass(const node &n, std::string_view what) {
  return as_enum<pass_kind>(n, what, {{"fwd", pass_kind::fwd}, {"fwd+bwd", pass_kind::fwd_bwd}});
}

const std::vector<node> &as_list(const node &n, std::string_view what, std::size_t max_items) {
  if (n.k != node::kind::sequence)
    fail(n, fmt::format("{} must be a list, got {}", what, strict_yaml::describe(n)));
  if (n.items.empty())
    fail(n, fmt::format("{} must not be empty", what));
  if (n.items.size() > max_items)
    fail(n, fmt::format("{} has {} items, more than the limit of {}", what, n.items.size(),
                        max_items));
  return n.items;
}

std::string as_id(const node &n, std::string_view what) {
  const std::string s = n.k == node::kind::scalar ? n.value : std::string();
  const bool ok = n.k == node::kind::scalar && !s.empty() && s.size() <= 64 && s[0] != '_' &&
                  s[0] != '-' &&
                  std::all_of(s.begin(), s.end(), [](char c) { return id_char(c, false); });
  if (!ok)
    fail(n, fmt::format("{} must match [a-z0-9][a-z0-9_-]{{0,63}}, got {}", what,
                        strict_yaml::describe(n)));
  return as_string(n, what);
}

std::string as_prediction_id(const node &n, std::string_view what) {
  const std::string s = n.k == node::kind::scalar ? n.value : std::string();
  const bool ok = n.k == node::kind::scalar && !s.empty() && s.size() <= 64 &&
                  std::all_of(s.begin(), s.end(), [](char c) { return id_char(c, true); });
  if (!ok)
    fail(n, fmt::format("{} must match [A-Za-z0-9_.-]{{1,64}}, got {}", what,
                        strict_yaml::describe(n)));
  return as_string(n, what);
}

std::string joined(const std::vector<std::string> &names, std::string_view separator) {
  std::string out;
  for (const auto &n : names)
    out += (out.empty() ? "" : std::string(separator)) + n;
  return out;
}

const node *key_node(const node &map, std::string_view key) {
  if (map.k != node::kind::mapping)
    return nullptr;
  for (const auto &[k, v] : map.entries)
    if (k.value == key)
      return &k;
  return nullptr;
}

fields::fields(const node &map, std::string_view what, const std::vector<std::string_view> &allowed)
    : m_map(map), m_what(what) {
  if (map.k != node::kind::mapping)
    fail(map, fmt::format("{} must be a mapping, got {}", what, strict_yaml::describe(map)));
  for (const auto &[key, value] : map.entries) {
    if (std::find(allowed.begin(), allowed.end(), key.value) != allowed.end())
      continue;
    std::string names;
    for (auto a : allowed)
      names += (names.empty() ? "" : ", ") + std::string(a);
    fail(key, fmt::format("unknown key '{}' in {} (allowed: {})", key.value, what, names));
  }
}

const node &fields::required(std::string_view key) const {
  if (const node *n = m_map.find(key))
    return *n;
  fail(m_map, fmt::format("missing required key '{}' in {}", key, m_what));
}

std::string fields::path(std::string_view key) const {
  return m_what == "the protocol" ? std::string(key) : fmt::format("{}.{}", m_what, key);
}

} // namespace prereg::protocol_detail
