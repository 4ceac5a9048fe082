// The escaping of quoted text on the pages: Markdown text, Markdown verbatim text, HTML.
#include "report/render/escape.hpp"

#include "prereg/error.hpp"

namespace prereg::render {
namespace {

thread_local bool g_escape_bidi = true;

/// The bidirectional control at byte i of `s` when they are escaped now (bidi_scope), else 0.
char32_t bidi_at(std::string_view s, std::size_t i) {
  return g_escape_bidi ? prereg::detail::bidi_control_at(s, i) : 0;
}

} // namespace

bidi_scope::bidi_scope(bool escape) : m_previous(g_escape_bidi) { g_escape_bidi = escape; }

bidi_scope::~bidi_scope() { g_escape_bidi = m_previous; }

std::string md(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (const char32_t bidi = bidi_at(s, i)) {
      out += "\\" +
             prereg::detail::bidi_escape(bidi); // the backslash itself escaped: shown, not markup
      i += prereg::detail::bidi_length(bidi) - 1;
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (std::string_view("\\`*[]<>|").find(c) != std::string_view::npos) {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

std::string md_verbatim(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (const char32_t bidi = bidi_at(s, i)) {
      out += prereg::detail::bidi_escape(bidi);
      i += prereg::detail::bidi_length(bidi) - 1;
    } else if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string md_code(std::string_view s) {
  const std::string body = md_verbatim(s);
  if (body.find('`') != std::string::npos)
    return "`` " + body + " ``";
  return "`" + body + "`";
}

std::string html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (const char32_t bidi = bidi_at(s, i)) {
      out += prereg::detail::bidi_escape(bidi);
      i += prereg::detail::bidi_length(bidi) - 1;
      continue;
    }
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

} // namespace prereg::render
