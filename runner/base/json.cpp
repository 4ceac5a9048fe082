// Strict I-JSON parsing (the canonical serialiser is json_canonical.cpp).
#include "base/json.hpp"

#include "base/utf8.hpp"
#include "prereg/error.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <system_error>
#include <utility>
#include <vector>

namespace prereg {
namespace {

[[nodiscard]] bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
[[nodiscard]] bool is_digit(char c) { return c >= '0' && c <= '9'; }

[[nodiscard]] int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string &out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

/// How a byte looks in a message: the character if printable ASCII, else its hex value.
[[nodiscard]] std::string describe_byte(char c) {
  const auto b = static_cast<unsigned char>(c);
  if (b > 0x20 && b < 0x7F)
    return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02X}", b);
}

/// A recursive-descent parser over bytes; recursion is bounded by max_json_depth.
class strict_parser {
public:
  strict_parser(std::string_view text, const std::string &file) : m_text(text), m_file(file) {}

  json parse_document() {
    if (m_text.size() >= 3 && m_text.substr(0, 3) == "\xEF\xBB\xBF")
      fail(0, "a UTF-8 byte order mark is not allowed");
    skip_ws();
    if (at_end())
      fail(m_pos, "empty input: expected a JSON value");
    json value = parse_value(0);
    skip_ws();
    if (!at_end())
      fail(m_pos, fmt::format("unexpected {} after the JSON value", describe_byte(peek())));
    return value;
  }

private:
  std::string_view m_text;
  const std::string &m_file;
  std::size_t m_pos = 0;

  [[nodiscard]] bool at_end() const { return m_pos >= m_text.size(); }
  [[nodiscard]] char peek() const { return m_text[m_pos]; }

  /// Throws exit 2 with `file:line:column` of byte offset `pos` (1-based, columns in bytes).
  [[noreturn]] void fail(std::size_t pos, const std::string &what) const {
    int line = 1;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < pos && i < m_text.size(); ++i) {
      if (m_text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    throw invalid_input("invalid JSON: " + what,
                        at(m_file, line, static_cast<int>(pos - line_start + 1)));
  }

  void skip_ws() {
    while (!at_end() && is_ws(peek()))
      ++m_pos;
  }

  [[nodiscard]] bool starts_with(std::string_view word) const {
    return m_text.substr(m_pos, word.size()) == word;
  }

  json parse_value(int depth) {
    if (at_end())
      fail(m_pos, "unexpected end of input: expected a value");
    const char c = peek();
    switch (c) {
    case '{':
      return parse_object(depth + 1);
    case '[':
      return parse_array(depth + 1);
    case '"':
      return parse_string_bytes();
    case 't':
      expect_word("true");
      return true;
    case 'f':
      expect_word("false");
      return false;
    case 'n':
      expect_word("null");
      return nullptr;
    default:
      if (c == '-' || is_digit(c))
        return parse_number();
      if (starts_with("NaN") || starts_with("Infinity"))
        fail(m_pos, "NaN and Infinity are not JSON numbers");
      fail(m_pos, fmt::format("unexpected {}: expected a value", describe_byte(c)));
    }
  }

  void expect_word(std::string_view word) {
    for (const char w : word) {
      if (at_end())
        fail(m_pos, fmt::format("unexpected end of input in '{}'", word));
      if (peek() != w)
        fail(m_pos, fmt::format("unexpected {} in '{}'", describe_byte(peek()), word));
      ++m_pos;
    }
  }

  void check_depth(int depth) const {
    if (depth > max_json_depth)
      fail(m_pos, fmt::format("nesting deeper than {} levels", max_json_depth));
  }

  json parse_array(int depth) {
    check_depth(depth);
    ++m_pos; // '['
    json result = json::array();
    skip_ws();
    if (!at_end() && peek() == ']') {
      ++m_pos;
      return result;
    }
    for (;;) {
      skip_ws();
      result.push_back(parse_value(depth));
      skip_ws();
      if (at_end())
        fail(m_pos, "unexpected end of input: expected ',' or ']'");
      if (peek() == ']') {
        ++m_pos;
        return result;
      }
      if (peek() != ',')
        fail(m_pos, fmt::format("unexpected {}: expected ',' or ']'", describe_byte(peek())));
      ++m_pos;
    }
  }

  json parse_object(int depth) {
    check_depth(depth);
    ++m_pos; // '{'
    json result = json::object();
    skip_ws();
    if (!at_end() && peek() == '}') {
      ++m_pos;
      return result;
    }
    for (;;) {
      skip_ws();
      if (at_end())
        fail(m_pos, "unexpected end of input: expected a string key");
      if (peek() != '"')
        fail(m_pos, fmt::format("unexpected {}: expected a string key", describe_byte(peek())));
      const std::size_t key_pos = m_pos;
      std::string key = parse_string_bytes();
      if (result.contains(key))
        fail(key_pos, fmt::format("duplicate object key \"{}\"", message_excerpt(key)));
      skip_ws();
      if (at_end())
        fail(m_pos, "unexpected end of input: expected ':'");
      if (peek() != ':')
        fail(m_pos, fmt::format("unexpected {}: expected ':'", describe_byte(peek())));
      ++m_pos;
      skip_ws();
      result.emplace(std::move(key), parse_value(depth));
      skip_ws();
      if (at_end())
        fail(m_pos, "unexpected end of input: expected ',' or '}'");
      if (peek() == '}') {
        ++m_pos;
        return result;
      }
      if (peek() != ',')
        fail(m_pos, fmt::format("unexpected {}: expected ',' or '}}'", describe_byte(peek())));
      ++m_pos;
    }
  }

  /// Reads 4 hex digits after "\u" at m_pos; returns the code unit.
  char32_t read_hex4() {
    char32_t unit = 0;
    for (int i = 0; i < 4; ++i) {
      if (at_end())
        fail(m_pos, "unexpected end of input in a \\u escape");
      const int h = hex_value(peek());
      if (h < 0)
        fail(m_pos, fmt::format("unexpected {} in a \\u escape", describe_byte(peek())));
      unit = unit * 16 + static_cast<char32_t>(h);
      ++m_pos;
    }
    return unit;
  }

  std::string parse_string_bytes() {
    ++m_pos; // '"'
    std::string out;
    for (;;) {
      if (at_end())
        fail(m_pos, "unexpected end of input in a string");
      const char c = peek();
      const auto b = static_cast<unsigned char>(c);
      if (c == '"') {
        ++m_pos;
        return out;
      }
      if (b < 0x20)
        fail(m_pos, fmt::format("raw control character 0x{:02X} in a string", b));
      if (c == '\\') {
        parse_escape(out);
        continue;
      }
      if (b < 0x80) {
        out += c;
        ++m_pos;
        continue;
      }
      char32_t cp = 0;
      const int len = utf8_sequence(m_text, m_pos, cp);
      if (len == 0)
        fail(m_pos, "invalid UTF-8 in a string");
      out.append(m_text.substr(m_pos, static_cast<std::size_t>(len)));
      m_pos += static_cast<std::size_t>(len);
    }
  }

  void parse_escape(std::string &out) {
    const std::size_t escape_pos = m_pos;
    ++m_pos; // '\'
    if (at_end())
      fail(m_pos, "unexpected end of input in an escape");
    const char e = peek();
    ++m_pos;
    switch (e) {
    case '"':
    case '\\':
    case '/':
      out += e;
      return;
    case 'b':
      out += '\b';
      return;
    case 'f':
      out += '\f';
      return;
    case 'n':
      out += '\n';
      return;
    case 'r':
      out += '\r';
      return;
    case 't':
      out += '\t';
      return;
    case 'u':
      break;
    default:
      fail(m_pos - 1, fmt::format("invalid escape '\\{}'", e));
    }
    char32_t unit = read_hex4();
    if (unit >= 0xDC00 && unit <= 0xDFFF)
      fail(escape_pos, fmt::format("lone low surrogate \\u{:04x}", static_cast<unsigned>(unit)));
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      if (!starts_with("\\u"))
        fail(escape_pos, fmt::format("lone high surrogate \\u{:04x}", static_cast<unsigned>(unit)));
      m_pos += 2;
      const char32_t low = read_hex4();
      if (low < 0xDC00 || low > 0xDFFF)
        fail(escape_pos, fmt::format("lone high surrogate \\u{:04x}", static_cast<unsigned>(unit)));
      unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, unit);
  }

  json parse_number() {
    const std::size_t start = m_pos;
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++m_pos;
      if (starts_with("Infinity"))
        fail(start, "NaN and Infinity are not JSON numbers");
    }
    if (at_end())
      fail(m_pos, "unexpected end of input in a number");
    if (!is_digit(peek()))
      fail(m_pos, fmt::format("unexpected {} in a number", describe_byte(peek())));
    if (peek() == '0') {
      ++m_pos;
      if (!at_end() && is_digit(peek()))
        fail(m_pos, "leading zeros are not allowed in a number");
    } else {
      while (!at_end() && is_digit(peek()))
        ++m_pos;
    }
    bool is_integer = true;
    if (!at_end() && peek() == '.') {
      is_integer = false;
      ++m_pos;
      expect_digits("a digit after the decimal point");
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      is_integer = false;
      ++m_pos;
      if (!at_end() && (peek() == '+' || peek() == '-'))
        ++m_pos;
      expect_digits("a digit in the exponent");
    }
    const std::string_view token = m_text.substr(start, m_pos - start);
    const char *first = token.data();
    const char *last = token.data() + token.size();
    if (is_integer) {
      if (negative) {
        std::int64_t v = 0;
        if (const auto r = std::from_chars(first, last, v); r.ec == std::errc{} && r.ptr == last)
          return v;
      } else {
        std::uint64_t v = 0;
        if (const auto r = std::from_chars(first, last, v); r.ec == std::errc{} && r.ptr == last)
          return v;
      }
    }
    double v = 0;
    const auto r = std::from_chars(first, last, v, std::chars_format::general);
    if (r.ec == std::errc::result_out_of_range) {
      if (magnitude_at_least_one(token))
        fail(start,
             fmt::format("number {} is outside the range of a double", message_excerpt(token)));
      return negative ? -0.0 : 0.0; // underflow: round to zero, as ECMAScript does
    }
    if (r.ec != std::errc{} || r.ptr != last)
      fail(start, fmt::format("cannot read number {}", message_excerpt(token)));
    return v;
  }

  void expect_digits(const char *what) {
    if (at_end())
      fail(m_pos, fmt::format("unexpected end of input: expected {}", what));
    if (!is_digit(peek()))
      fail(m_pos, fmt::format("unexpected {}: expected {}", describe_byte(peek()), what));
    while (!at_end() && is_digit(peek()))
      ++m_pos;
  }

  /// Whether a (grammatically valid, nonzero) number token is >= 1 in magnitude; tells an
  /// overflow from an underflow when from_chars reports out of range.
  [[nodiscard]] static bool magnitude_at_least_one(std::string_view token) {
    std::size_t i = token.front() == '-' ? 1 : 0;
    long long int_digits = 0; // digits before the point
    long long first_nz = -1;  // index of the first nonzero mantissa digit
    long long index = 0;
    bool in_fraction = false;
    long long exponent = 0;
    for (; i < token.size(); ++i) {
      const char c = token[i];
      if (c == '.') {
        in_fraction = true;
        continue;
      }
      if (c == 'e' || c == 'E') {
        ++i;
        bool neg_exp = false;
        if (token[i] == '+' || token[i] == '-')
          neg_exp = token[i++] == '-';
        for (; i < token.size(); ++i)
          exponent = std::min<long long>(exponent * 10 + (token[i] - '0'), 1'000'000'000);
        if (neg_exp)
          exponent = -exponent;
        break;
      }
      if (!in_fraction)
        ++int_digits;
      if (c != '0' && first_nz < 0)
        first_nz = index;
      ++index;
    }
    if (first_nz < 0)
      return false; // all digits zero
    // The value is 0.d... * 10^order, d the first nonzero digit.
    const long long order = exponent + int_digits - first_nz;
    return order > 0;
  }
};

} // namespace

json parse_json_strict(std::string_view text, const std::string &file) {
  return strict_parser(text, file).parse_document();
}

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

} // namespace prereg
