// Typed errors carrying the contract's exit code and where the problem is.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace prereg {

/// The exit codes (docs/cli.md), the same for every command.
enum class exit_code : int {
  ok = 0,
  failure = 1,      ///< internal or I/O failure
  invalid = 2,      ///< usage error or invalid input
  integrity = 3,    ///< refused on integrity
  audit_failed = 4, ///< at least one audit check failed
  environment = 5,  ///< the environment cannot serve (e.g. no usable CUDA device)
};

/// The one exception type of the tool: `main` catches it once and prints
/// `prereg: error: WHAT (WHERE)` and exits with `code()`.
class error : public std::runtime_error {
public:
  error(exit_code code, const std::string &what, std::string where = {})
      : std::runtime_error(what), m_code(code), m_where(std::move(where)) {}

  /// The exit code the process ends with.
  [[nodiscard]] exit_code code() const noexcept { return m_code; }
  /// A file, `file:line:column` for YAML/JSON input, or empty.
  [[nodiscard]] const std::string &where() const noexcept { return m_where; }
  /// The one-line message `prereg: error: WHAT (WHERE)` without the prefix.
  [[nodiscard]] std::string line() const {
    return m_where.empty() ? std::string(what()) : std::string(what()) + " (" + m_where + ")";
  }

private:
  exit_code m_code;
  std::string m_where;
};

/// Invalid input or usage (exit 2).
[[nodiscard]] inline error invalid_input(const std::string &what, std::string where = {}) {
  return {exit_code::invalid, what, std::move(where)};
}
/// Refused on integrity (exit 3).
[[nodiscard]] inline error integrity_error(const std::string &what, std::string where = {}) {
  return {exit_code::integrity, what, std::move(where)};
}
/// Internal or I/O failure (exit 1).
[[nodiscard]] inline error io_error(const std::string &what, std::string where = {}) {
  return {exit_code::failure, what, std::move(where)};
}
/// The environment cannot serve (exit 5).
[[nodiscard]] inline error environment_error(const std::string &what, std::string where = {}) {
  return {exit_code::environment, what, std::move(where)};
}

/// At most `max` bytes of user text (cut at a UTF-8 boundary, "..." added) for a message, so
/// that a hostile 900 KB value never becomes a 900 KB error line.
[[nodiscard]] inline std::string message_excerpt(std::string_view text, std::size_t max = 80) {
  if (text.size() <= max)
    return std::string(text);
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;
  return std::string(text.substr(0, cut)) + "...";
}

/// `text` with every control character written as an escape (`\n`, `\t`, `\x1b`, `\0`; also DEL
/// and the C1 controls U+0080..U+009F as `\u0085`, and the bidirectional controls U+061C,
/// U+200E, U+200F, U+202A..U+202E and U+2066..U+2069 as `\u202e`), so that a message stays one
/// line, sends no terminal escape and cannot reorder what a terminal shows, whatever user text it
/// quotes.
namespace detail {
/// The bidirectional control (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) whose
/// UTF-8 bytes start at text[i], or 0.
[[nodiscard]] inline char32_t bidi_control_at(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u;
  };
  if (at(0) == 0xd8 && at(1) == 0x9c)
    return 0x061c;
  if (at(0) != 0xe2)
    return 0;
  const unsigned b = at(1), c = at(2);
  if (b == 0x80 && (c == 0x8e || c == 0x8f || (c >= 0xaa && c <= 0xae)))
    return 0x2000 + (c - 0x80);
  if (b == 0x81 && c >= 0xa6 && c <= 0xa9)
    return 0x2040 + (c - 0x80);
  return 0;
}
/// How many bytes the bidirectional control `cp` (bidi_control_at) takes in UTF-8.
[[nodiscard]] inline std::size_t bidi_length(char32_t cp) { return cp == 0x061c ? 2 : 3; }
/// `\u202e` for a bidirectional control (bidi_control_at), written in its place.
[[nodiscard]] inline std::string bidi_escape(char32_t cp) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "\\u";
  for (int shift = 12; shift >= 0; shift -= 4)
    out += hex[(cp >> shift) & 15];
  return out;
}
} // namespace detail

[[nodiscard]] inline std::string escape_control(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c == 0)
      out += "\\0";
    else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else if (const char32_t b = detail::bidi_control_at(text, i); b != 0) {
      out += detail::bidi_escape(b);
      i += detail::bidi_length(b) - 1;
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      const auto d = static_cast<unsigned char>(text[++i]);
      out += "\\u00";
      out += hex[d >> 4];
      out += hex[d & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

/// `file:line:column` with 1-based line and column.
[[nodiscard]] inline std::string at(const std::string &file, int line, int column) {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

} // namespace prereg
