// What the site's pages share: the page frame and small formatters (internal to site/).
#pragma once

#include <string>
#include <string_view>

namespace prereg::site::detail {

/// A whole HTML page around `body`, titled `title`, with the site's inline style.
[[nodiscard]] std::string page(std::string_view title, std::string_view body);
/// HTML-escaped text.
[[nodiscard]] std::string esc(std::string_view s);
/// A verdict as a coloured badge ("confirmed" green, "refuted" red, else grey).
[[nodiscard]] std::string verdict_badge(std::string_view verdict, std::string_view title = {});
/// A report's status as a badge ("audited" green, else red with `why` as its tooltip).
[[nodiscard]] std::string status_badge(std::string_view status, std::string_view why);
/// A duration in ms with three significant digits and a unit (ns, us, ms, s).
[[nodiscard]] std::string ms_text(double ms);

} // namespace prereg::site::detail
