// The escaping of quoted text on the pages: Markdown text, Markdown verbatim text, HTML.
#pragma once

#include <string>
#include <string_view>

namespace prereg::render {

/// Markdown text: a backslash before \ ` * [ ] < > | (nothing starts markup, an HTML tag or
/// breaks a table row); newlines become spaces.
[[nodiscard]] std::string md(std::string_view s);

/// Markdown text quoted verbatim (a code span's body, a merged page's table cell): only `|` is
/// escaped, so a table row does not break; newlines become spaces.
[[nodiscard]] std::string md_verbatim(std::string_view s);

/// A Markdown code span holding `s` verbatim (double backticks where `s` holds a backtick).
[[nodiscard]] std::string md_code(std::string_view s);

/// HTML text or attribute value: & < > " ' as entities.
[[nodiscard]] std::string html(std::string_view s);

/// While it lives, whether md(), md_verbatim(), md_code() and html() on this thread write each
/// bidirectional control (U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) as the visible text
/// `\u202e` instead of the character that would reorder the text around it. Outside any scope
/// they do; a report's pages set it by their renderer (6 and later: on), so that the pages of
/// earlier renderers are made exactly as they were.
class bidi_scope {
public:
  explicit bidi_scope(bool escape);
  ~bidi_scope();
  bidi_scope(const bidi_scope &) = delete;
  bidi_scope &operator=(const bidi_scope &) = delete;

private:
  bool m_previous;
};

} // namespace prereg::render
