// The site's page frame, style and badges.
#include "site/pages_common.hpp"

#include "report/render/escape.hpp"

#include <fmt/format.h>

namespace prereg::site::detail {

namespace {

constexpr std::string_view style =
    R"(body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}code{font-size:.92em}.muted{color:#666}
.b{display:inline-block;padding:0 5px;border-radius:3px;font-size:.85em;color:#fff}
.ok{background:#2a7d2a}.bad{background:#b22}.mid{background:#777}.warn{background:#c60}
.grid td{padding:0;border:1px solid #fff}.grid .b{min-width:1.1em;text-align:center;padding:0 2px}
.banner{border:2px solid #b22;padding:.5em;margin:1em 0}
svg{display:block;margin:.3em 0 1em 0}svg text{font-size:11px;fill:#444}
)";

} // namespace

std::string esc(std::string_view s) { return render::html(s); }

std::string page(std::string_view title, std::string_view body) {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                     "style-src 'unsafe-inline'\">"
                     "<meta name=\"viewport\" content=\"width=device-width\">"
                     "<title>{}</title><style>{}</style></head>\n<body>\n{}</body></html>\n",
                     esc(title), style, body);
}

std::string verdict_badge(std::string_view verdict, std::string_view title) {
  const char *cls = verdict == "confirmed" ? "ok" : verdict == "refuted" ? "bad" : "mid";
  const std::string text = verdict.empty() ? "?" : std::string(1, verdict.front());
  return fmt::format("<span class=\"b {}\" title=\"{}\">{}</span>", cls,
                     esc(title.empty() ? verdict : title), esc(text));
}

std::string status_badge(std::string_view status, std::string_view why) {
  const char *cls = status == "audited" ? "ok" : status == "audit failed" ? "bad" : "warn";
  return fmt::format("<span class=\"b {}\" title=\"{}\">{}</span>", cls, esc(why), esc(status));
}

std::string ms_text(double ms) {
  if (ms >= 1000)
    return fmt::format("{:.3g} s", ms / 1000);
  if (ms >= 1)
    return fmt::format("{:.3g} ms", ms);
  if (ms >= 1e-3)
    return fmt::format("{:.3g} us", ms * 1e3);
  return fmt::format("{:.3g} ns", ms * 1e6);
}

} // namespace prereg::site::detail
