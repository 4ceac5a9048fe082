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
.grid td{padding:0;border:1px solid #fff}.grid .b{min-width:1.1em;text-align:center;padding:0 3px;margin:1px}
a.b{text-decoration:none}a.b:hover,a.b:focus{outline:2px solid #222}
.vh{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.rev{font-weight:normal;color:#444}.claim{font-weight:normal;color:#444;font-size:.9em}
.revs li.here{font-weight:bold}tbody.id th.id{background:#e8eef6}
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

std::string verdict_badge(const verdict_fact &v, std::string_view context, std::string_view href,
                          std::string_view label) {
  const bool ok = v.verdict == "confirmed", bad = v.verdict == "refuted";
  const char *cls = ok ? "ok" : bad ? "bad" : "mid";
  const char *mark = ok ? "\u2713" : bad ? "\u2717" : "?";
  const std::string verdict = v.verdict.empty() ? "no verdict" : v.verdict;
  const std::string claim = v.claim.empty() ? "" : fmt::format(" ({})", v.claim);
  const std::string after = context.empty() ? "" : fmt::format(" \u2014 {}", context);
  const std::string title = fmt::format("{}{}: {}{}", v.id, claim, verdict, after);
  const std::string text =
      fmt::format("{} {}<span class=\"vh\">{}: {}{}</span>", esc(label.empty() ? v.id : label),
                  mark, esc(label.empty() ? claim : " " + v.id + claim), esc(verdict), esc(after));
  if (href.empty())
    return fmt::format("<span class=\"b v {}\" title=\"{}\">{}</span>", cls, esc(title), text);
  return fmt::format("<a class=\"b v {}\" href=\"{}\" title=\"{}\">{}</a>", cls, esc(href),
                     esc(title), text);
}

std::string change_badge(double ratio) {
  const bool slower = ratio > 1;
  return fmt::format("<span class=\"b {}\" title=\"{}\">{}</span> {:+.1f}%", slower ? "bad" : "ok",
                     slower ? "slower" : "faster", slower ? "slower" : "faster", (ratio - 1) * 100);
}

std::string status_badge(std::string_view status, std::string_view why) {
  const char *cls = status == "audited" ? "ok" : status == "audit failed" ? "bad" : "warn";
  return fmt::format("<span class=\"b {}\" title=\"{}\">{}</span>", cls, esc(why), esc(status));
}

std::string url_path(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~' || c == '/')
      out += c;
    else
      out += fmt::format("%{:02X}", u);
  }
  return out;
}

std::string report_url(std::string_view reports_href, const report_facts &r) {
  if (r.page.empty())
    return "";
  return std::string(reports_href) + url_path(r.rel) + "/" + r.page;
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
