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

} // namespace prereg::render
