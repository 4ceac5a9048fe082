// A small table model of the pages, rendered to Markdown or to HTML.
#include "report/render/table.hpp"

#include "report/render/escape.hpp"

namespace prereg::render {
namespace {

std::string md_span(const span &s) {
  std::string t = s.code ? md_code(s.text) : md(s.text);
  if (s.strong && !t.empty())
    t = "**" + t + "**";
  return md(s.prefix) + t + md(s.suffix);
}

std::string html_span(const span &s) {
  std::string t = html(s.text);
  if (s.code)
    t = "<code>" + t + "</code>";
  if (s.strong)
    t = "<strong>" + t + "</strong>";
  if (!s.suffix.empty())
    t += "<span class=\"suffix\">" + html(s.suffix) + "</span>";
  return html(s.prefix) + t;
}

std::string html_attrs(const span &s, bool numeric) {
  std::string cls = s.cls;
  if (numeric)
    cls += cls.empty() ? "num" : " num";
  std::string out;
  if (!cls.empty())
    out += " class=\"" + html(cls) + "\"";
  if (!s.title.empty())
    out += " title=\"" + html(s.title) + "\"";
  return out;
}

} // namespace

span plain(std::string t) {
  span s;
  s.text = std::move(t);
  return s;
}

span code(std::string t) {
  span s = plain(std::move(t));
  s.code = true;
  return s;
}

std::string to_markdown(const table &t) {
  // Appended piece by piece: " " + string trips GCC 12's -Wrestrict (a false positive).
  std::string out = "|";
  for (const auto &h : t.header)
    out.append(" ").append(md_span(h)).append(" |");
  out += "\n|";
  for (std::size_t i = 0; i < t.header.size(); ++i)
    out += (i < t.numeric.size() && t.numeric[i]) ? " ---: |" : " --- |";
  out += "\n";
  for (const auto &row : t.rows) {
    out += "|";
    for (const auto &c : row)
      out.append(" ").append(md_span(c)).append(" |");
    out += "\n";
  }
  return out;
}

std::string to_html(const table &t) {
  const auto numeric = [&](std::size_t i) { return i < t.numeric.size() && t.numeric[i]; };
  std::string out = t.cls.empty() ? "<table>" : "<table class=\"" + html(t.cls) + "\">";
  out += "<thead><tr>";
  if (t.cls == "kv" && t.header.size() == 2 && t.header[1].text.empty()) {
    out += "<th scope=\"colgroup\" colspan=\"2\">" + html_span(t.header[0]) + "</th>";
  } else {
    for (std::size_t i = 0; i < t.header.size(); ++i)
      out += "<th scope=\"col\"" + html_attrs(t.header[i], numeric(i)) + ">" +
             html_span(t.header[i]) + "</th>";
  }
  out += "</tr></thead>\n<tbody>\n";
  for (const auto &row : t.rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) {
      const bool th = t.row_headers && i == 0;
      out += std::string(th ? "<th scope=\"row\"" : "<td") + html_attrs(row[i], numeric(i)) + ">" +
             html_span(row[i]) + (th ? "</th>" : "</td>");
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

} // namespace prereg::render
