// The escaping of quoted text on the pages: Markdown text, Markdown verbatim text, HTML.
#include "report/render/escape.hpp"

namespace prereg::render {

std::string md(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '\n' || c == '\r') {
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
  for (const char c : s) {
    if (c == '|')
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
  for (const char c : s) {
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
