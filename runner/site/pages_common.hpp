// What the site's pages share: the page frame and small formatters (internal to site/).
#pragma once

#include "site/history.hpp"

#include <string>
#include <string_view>

namespace prereg::site::detail {

/// A whole HTML page around `body`, titled `title`, with the site's inline style.
[[nodiscard]] std::string page(std::string_view title, std::string_view body);
/// HTML-escaped text.
[[nodiscard]] std::string esc(std::string_view s);
/// A prediction's verdict as a coloured badge ("confirmed" green with a check mark, "refuted" red
/// with a cross, else grey with "?"): its visible text is the prediction's id and the mark (with
/// `label` instead of the id where given), its tooltip and its hidden text for screen readers
/// say the id, the claim, the verdict and `context`; a link to `href` where that is not empty.
[[nodiscard]] std::string verdict_badge(const verdict_fact &v, std::string_view context,
                                        std::string_view href, std::string_view label = {});
/// A change as a coloured badge: red "slower", green "faster".
[[nodiscard]] std::string change_badge(double ratio);
/// A report's status as a badge ("audited" green, else red with `why` as its tooltip).
[[nodiscard]] std::string status_badge(std::string_view status, std::string_view why);
/// A duration in ms with three significant digits and a unit (ns, us, ms, s).
[[nodiscard]] std::string ms_text(double ms);
/// The URL of report `r`'s page (its folder's report.html, else report.md) under `reports_href`
/// (the reports folder as seen from the site's folder, ending in "/"), each path segment
/// percent-encoded; "" when the folder has no page.
[[nodiscard]] std::string report_url(std::string_view reports_href, const report_facts &r);
/// `s` percent-encoded for a URL path: every byte but A-Z a-z 0-9 - . _ ~ and "/".
[[nodiscard]] std::string url_path(std::string_view s);

} // namespace prereg::site::detail
