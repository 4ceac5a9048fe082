// RFC 8785 (JCS) canonical serialisation: minimal string escapes, keys sorted by UTF-16 code
// units, and ECMAScript number formatting.
#include "base/json.hpp"

#include "base/utf8.hpp"
#include "prereg/error.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <utility>
#include <vector>

namespace prereg {
namespace {

/// Appends `s` as a JSON string with RFC 8785's minimal escapes; rejects invalid UTF-8.
void append_string(std::string &out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0x80) {
      char32_t cp = 0;
      const int len = utf8_sequence(s, i, cp);
      if (len == 0)
        throw invalid_input(fmt::format("invalid UTF-8 at byte {} of a string", i));
      out.append(s.substr(i, static_cast<std::size_t>(len)));
      i += static_cast<std::size_t>(len);
      continue;
    }
    switch (b) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (b < 0x20) {
        out += "\\u00";
        out += hex[b >> 4];
        out += hex[b & 0xF];
      } else {
        out += static_cast<char>(b);
      }
    }
    ++i;
  }
  out += '"';
}

/// The UTF-16 code units of a UTF-8 string (the order RFC 8785 sorts keys in).
[[nodiscard]] std::u16string to_utf16(std::string_view s) {
  std::u16string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const int len = utf8_sequence(s, i, cp);
    if (len == 0)
      throw invalid_input(fmt::format("invalid UTF-8 at byte {} of an object key", i));
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out += static_cast<char16_t>(0xD800 + (cp >> 10));
      out += static_cast<char16_t>(0xDC00 + (cp & 0x3FF));
    } else {
      out += static_cast<char16_t>(cp);
    }
    i += static_cast<std::size_t>(len);
  }
  return out;
}

void append_canonical(std::string &out, const json &value, int depth) {
  switch (value.type()) {
  case json::value_t::null:
    out += "null";
    return;
  case json::value_t::boolean:
    out += value.get<bool>() ? "true" : "false";
    return;
  case json::value_t::number_integer:
    out += format_number(static_cast<double>(value.get<std::int64_t>()));
    return;
  case json::value_t::number_unsigned:
    out += format_number(static_cast<double>(value.get<std::uint64_t>()));
    return;
  case json::value_t::number_float:
    out += format_number(value.get<double>());
    return;
  case json::value_t::string:
    append_string(out, value.get_ref<const std::string &>());
    return;
  case json::value_t::array: {
    if (depth + 1 > max_json_depth)
      throw invalid_input(fmt::format("JSON nesting deeper than {} levels", max_json_depth));
    out += '[';
    bool first = true;
    for (const auto &element : value) {
      if (!first)
        out += ',';
      first = false;
      append_canonical(out, element, depth + 1);
    }
    out += ']';
    return;
  }
  case json::value_t::object: {
    if (depth + 1 > max_json_depth)
      throw invalid_input(fmt::format("JSON nesting deeper than {} levels", max_json_depth));
    std::vector<std::pair<std::u16string, json::const_iterator>> members;
    members.reserve(value.size());
    for (auto it = value.cbegin(); it != value.cend(); ++it)
      members.emplace_back(to_utf16(it.key()), it);
    std::sort(members.begin(), members.end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    out += '{';
    bool first = true;
    for (const auto &[units, it] : members) {
      if (!first)
        out += ',';
      first = false;
      append_string(out, it.key());
      out += ':';
      append_canonical(out, it.value(), depth + 1);
    }
    out += '}';
    return;
  }
  case json::value_t::binary:
  case json::value_t::discarded:
    break;
  }
  throw invalid_input("a binary or discarded value has no canonical JSON form");
}

} // namespace

std::string canonical_json(const json &value) {
  std::string out;
  append_canonical(out, value, 0);
  return out;
}

std::string format_number(double value) {
  if (!std::isfinite(value))
    throw invalid_input("NaN and Infinity have no JSON form");
  if (value == 0)
    return "0"; // also -0
  // Shortest round-trip digits, laid out as "[-]d[.ddd]e(+|-)x".
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<std::size_t>(r.ptr - buf));
  std::string out;
  std::size_t i = 0;
  if (sci[i] == '-') {
    out += '-';
    ++i;
  }
  std::string digits;
  for (; sci[i] != 'e'; ++i)
    if (sci[i] != '.')
      digits += sci[i];
  int exponent = 0;
  const char *exp_first = sci.data() + i + 1;
  if (*exp_first == '+')
    ++exp_first;
  std::from_chars(exp_first, sci.data() + sci.size(), exponent);

  // ECMA-262 Number::toString: value = digits * 10^(n - k).
  const int k = static_cast<int>(digits.size());
  const int n = exponent + 1;
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, static_cast<std::size_t>(n));
    out += '.';
    out.append(digits, static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += n - 1 >= 0 ? "e+" : "e-";
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

} // namespace prereg
