// The merged report's report.md and report.html, rendered from its report.json alone; quoted
// text is escaped by the report's page escaping (report/render/escape.hpp).
#include "run/merge.hpp"

#include "prereg/error.hpp"
#include "report/render/escape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace prereg {
namespace {

using render::html;

/// The merged page's Markdown quoting by its layout (tool.renderer): renderer 1 (merges made
/// before it was recorded) quotes verbatim with only `|` escaped; renderer 2 escapes quoted text
/// exactly as a run page does (render::md), so a hostile claim or name starts no markup.
using quote_fn = std::string (*)(std::string_view);

quote_fn markdown_quote(const json &m) {
  const auto tool = m.find("tool");
  const json renderer =
      tool != m.end() && tool->is_object() ? tool->value("renderer", json(1)) : json(1);
  if (renderer == json(1))
    return render::md_verbatim;
  if (renderer == json(merged_renderer_version))
    return render::md;
  throw invalid_input(fmt::format("tool.renderer is {}; this build renders merged pages with "
                                  "renderers 1 to {}",
                                  message_excerpt(renderer.dump()), merged_renderer_version),
                      "report.json");
}

std::string number(const json &v, const char *format) {
  if (!v.is_number())
    return "-";
  return fmt::format(fmt::runtime(format), v.get<double>());
}

/// One table of a merged page: a title, then (header, rows).
struct merged_table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// Replication: a device's row, its verdict per pooled prediction.
std::vector<std::string> device_row(const json &p, const json &predictions) {
  std::vector<std::string> row = {p.value("device_name", ""),
                                  std::to_string(p.value("device_ordinal", 0)),
                                  p.value("run_id", ""), number(p.at("ceiling_gbps"), "{:.1f}"),
                                  number(p.at("launch_floor_ms"), "{:.4g}")};
  for (const auto &pr : predictions) {
    std::string v = "-";
    for (const auto &pv : p.at("verdicts"))
      if (pv.value("id", "") == pr.value("id", ""))
        v = pv.value("verdict", "");
    row.push_back(v);
  }
  return row;
}

std::vector<std::string> shard_row(const json &p) {
  const json &s = p.at("shard");
  return {fmt::format("{}/{}", s.value("index", 0), s.value("count", 0)),
          p.value("device_name", ""),
          p.value("run_id", ""),
          std::to_string(p.value("cells", 0)),
          number(p.at("ceiling_gbps"), "{:.1f}"),
          number(p.at("launch_floor_ms"), "{:.4g}")};
}

merged_table parts_table(const json &m, bool replication) {
  merged_table parts{replication ? "Per device" : "Shards", {}, {}};
  parts.header = replication ? std::vector<std::string>{"device", "ordinal", "run", "ceiling GB/s",
                                                        "launch floor ms"}
                             : std::vector<std::string>{"shard", "device",       "run",
                                                        "cells", "ceiling GB/s", "launch floor ms"};
  const json &predictions = m.at("predictions");
  if (replication)
    for (const auto &p : predictions)
      parts.header.push_back(p.value("id", ""));
  for (const auto &p : m.at("parts"))
    parts.rows.push_back(replication ? device_row(p, predictions) : shard_row(p));
  return parts;
}

merged_table verdicts_table(const json &m, bool replication) {
  merged_table verdicts{replication ? "Pooled verdicts" : "Verdicts over the union of the shards",
                        {"id", "verdict", "claim", "expect", "reason"},
                        {}};
  for (const auto &p : m.at("predictions"))
    verdicts.rows.push_back({p.value("id", ""), p.value("verdict", ""), p.value("claim", ""),
                             p.value("expect", ""), p.value("reason", "")});
  return verdicts;
}

// A named cell's shape as "b=1 n=64 d=64" (docs/report.md, "Cell keys").
std::string shape_text(const json &shape) {
  std::string out;
  for (const auto &a : shape)
    if (a.is_object() && a.contains("axis") && a["axis"].is_string() && a.contains("extent") &&
        a["extent"].is_number_integer())
      out += fmt::format("{}{}={}", out.empty() ? "" : " ", a["axis"].get<std::string>(),
                         a["extent"].get<std::int64_t>());
  return out;
}

// Over named axes one "shape" column in place of rows and cols (rows x cols pages unchanged).
merged_table cells_table(const json &m) {
  const json &all = m.at("cells");
  const bool named =
      std::any_of(all.begin(), all.end(), [](const json &c) { return c.contains("shape"); });
  merged_table cells{"Cells", {"arm", "pass", "rows", "cols", "n", "median ms", "GB/s"}, {}};
  if (named)
    cells.header = {"arm", "pass", "shape", "n", "median ms", "GB/s"};
  for (const auto &c : all) {
    std::vector<std::string> row{c.value("arm", ""), c.value("pass", "")};
    if (named) {
      row.push_back(c.contains("shape") && c["shape"].is_array() ? shape_text(c["shape"]) : "");
    } else {
      row.push_back(std::to_string(c.value("rows", 0)));
      row.push_back(std::to_string(c.value("cols", 0)));
    }
    for (std::string x : {std::to_string(c.value("n", 0)), number(c.at("median_ms"), "{:.4f}"),
                          number(c.at("gbps"), "{:.1f}")})
      row.push_back(std::move(x));
    cells.rows.push_back(std::move(row));
  }
  return cells;
}

/// The tables of a merged report: parts, verdicts, and (shards) the cells.
std::vector<merged_table> merged_tables(const json &m) {
  const bool replication = m.value("kind", "") == "replication";
  std::vector<merged_table> out;
  out.push_back(parts_table(m, replication));
  out.push_back(verdicts_table(m, replication));
  if (!replication)
    out.push_back(cells_table(m));
  return out;
}

std::string merged_title(const json &m) {
  const json &body = m.at("protocol").at("body");
  return fmt::format("{} ({}): {} report {}", body.value("id", ""),
                     m.at("protocol").value("hash", "").substr(0, 12),
                     m.value("kind", "") == "replication" ? "replication" : "merged shards",
                     m.at("merge").value("merge_id", ""));
}

std::string markdown_table(const merged_table &t, quote_fn md_quote) {
  std::string out = fmt::format("\n## {}\n\n|", t.title);
  for (const auto &h : t.header)
    out += fmt::format(" {} |", md_quote(h));
  out += "\n|";
  for (std::size_t i = 0; i < t.header.size(); ++i)
    out += " --- |";
  out += "\n";
  for (const auto &row : t.rows) {
    out += "|";
    for (const auto &c : row)
      out += fmt::format(" {} |", md_quote(c));
    out += "\n";
  }
  return out;
}

std::string html_table(const merged_table &t) {
  std::string out = fmt::format("<h2>{}</h2>\n<table><tr>", html(t.title));
  for (const auto &h : t.header)
    out += fmt::format("<th>{}</th>", html(h));
  out += "</tr>\n";
  for (const auto &row : t.rows) {
    out += "<tr>";
    for (const auto &c : row)
      out += fmt::format("<td>{}</td>", html(c));
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

} // namespace

std::string render_merged_markdown(const json &m) {
  const render::bidi_scope bidi(false); // merged renderers 1 and 2 quote as they always did
  const quote_fn md_quote = markdown_quote(m);
  std::string out = fmt::format("# {}\n\n", md_quote(merged_title(m)));
  const json &body = m.at("protocol").at("body");
  out += fmt::format("Protocol `{}`, merged at {} from {} signed part(s), each audited and kept "
                     "under `parts/`.\n",
                     m.at("protocol").value("hash", ""), m.at("merge").value("merged_at", ""),
                     m.at("parts").size());
  if (const auto r = m.find("replication"); r != m.end())
    out += fmt::format("\nReplication rule (frozen): `{}` of {} devices ({} confirmation(s) "
                       "needed).\n",
                       r->value("rule", ""), r->value("devices", 0), r->value("threshold", 0));
  out += fmt::format("\nHypothesis: {}\n", md_quote(body.value("hypothesis", "")));
  for (const auto &t : merged_tables(m))
    out += markdown_table(t, md_quote);
  return out;
}

std::string render_merged_html(const json &m) {
  const render::bidi_scope bidi(false); // merged renderers 1 and 2 quote as they always did
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
                    html(merged_title(m)) +
                    "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
                    "collapse}td,th{border:1px solid #999;padding:2px 6px}</style></head><body>\n";
  out += "<h1>" + html(merged_title(m)) + "</h1>\n";
  out += "<p>Protocol <code>" + html(m.at("protocol").value("hash", "")) + "</code>, merged at " +
         html(m.at("merge").value("merged_at", "")) + " from " +
         std::to_string(m.at("parts").size()) +
         " signed part(s), each audited and kept under <code>parts/</code>.</p>\n";
  if (const auto r = m.find("replication"); r != m.end())
    out += "<p>Replication rule (frozen): <code>" + html(r->value("rule", "")) + "</code> of " +
           std::to_string(r->value("devices", 0)) + " devices (" +
           std::to_string(r->value("threshold", 0)) + " confirmation(s) needed).</p>\n";
  for (const auto &t : merged_tables(m))
    out += html_table(t);
  return out + "</body></html>\n";
}

} // namespace prereg
