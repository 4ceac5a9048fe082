// Per-cell trends across runs: the series, the steps table and the SVG charts.
#include "site/trends.hpp"

#include "site/pages_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace prereg::site::detail {

std::vector<series> series_of(const protocol_facts &p) {
  std::vector<series> out;
  std::map<std::string, std::size_t> index;
  for (const report_facts *r : p.reports)
    for (const cell_fact &c : r->medians) {
      auto [it, added] = index.emplace(c.label, out.size());
      if (added)
        out.push_back({c.label, {}, {}, {}, {}, {}, {}});
      series &s = out[it->second];
      s.runs.push_back(r);
      s.medians_ms.push_back(c.median_ms);
      s.q1_ms.push_back(c.q1_ms);
      s.q3_ms.push_back(c.q3_ms);
    }
  for (series &s : out) {
    s.steps = detect_steps(s.medians_ms);
    for (const step &j : detect_jumps(s.medians_ms, s.q1_ms, s.q3_ms))
      if (std::none_of(s.steps.begin(), s.steps.end(), [&](const step &t) { return t.at == j.at; }))
        s.jumps.push_back(j);
  }
  return out;
}

namespace {

/// The run a step or jump starts at: "K of N: RUN_ID", the run id linked to its report.
std::string run_cell(const series &s, std::size_t at, std::string_view reports_href) {
  const report_facts &r = *s.runs[at];
  const std::string url = report_url(reports_href, r);
  const std::string id = fmt::format("<code>{}</code>", esc(r.run_id));
  return fmt::format("{} of {}: {}", at + 1, s.runs.size(),
                     url.empty() ? id : fmt::format("<a href=\"{}\">{}</a>", esc(url), id));
}

std::string change_row(const series &s, const step &st, const char *kind,
                       std::string_view reports_href) {
  const report_facts &r = *s.runs[st.at];
  return fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td><code>{}</code></td>"
                     "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     esc(s.label), kind, run_cell(s, st.at, reports_href),
                     esc(r.commit.substr(0, 12)), esc(r.device), ms_text(st.before),
                     ms_text(st.after), change_badge(st.ratio()));
}

} // namespace

std::string render_steps(const std::vector<series> &all, std::string_view reports_href) {
  std::string rows;
  for (const series &s : all) {
    for (const step &st : s.steps)
      rows += change_row(s, st, "step", reports_href);
    for (const step &st : s.jumps)
      rows += change_row(s, st, "jump", reports_href);
  }
  if (rows.empty())
    return "<p class=\"muted\">No steps: no cell's median moved by 5% or more between levels "
           "(or fewer than 3 audited runs), and no run jumped by 5% or more from the one before "
           "it beyond both interquartile ranges.</p>\n";
  return "<p class=\"muted\">A <em>step</em> is a change of level the step detector found; a "
         "<em>jump</em> a change of 5% or more from one run to the next whose interquartile "
         "ranges do not overlap.</p>\n<table><tr><th>cell</th><th>kind</th><th>at run</th>"
         "<th>commit</th><th>device</th><th>before</th><th>after</th><th>change</th></tr>\n" +
         rows + "</table>\n";
}

namespace {

constexpr double chart_w = 640, chart_h = 150, pad_l = 64, pad_r = 8, pad_t = 8, pad_b = 30;

/// The chart's scales: x by run position, y from the lowest q1 to the highest q3.
struct scales {
  double lo = 0, hi = 0;
  std::size_t n = 0;
  [[nodiscard]] double x(double i) const {
    return pad_l + (n > 1 ? i / static_cast<double>(n - 1) : 0.5) * (chart_w - pad_l - pad_r);
  }
  [[nodiscard]] double y(double v) const {
    return pad_t + (1 - (v - lo) / (hi - lo)) * (chart_h - pad_t - pad_b);
  }
};

scales scales_of(const series &s) {
  scales sc;
  sc.n = s.medians_ms.size();
  sc.lo = std::min(*std::min_element(s.q1_ms.begin(), s.q1_ms.end()),
                   *std::min_element(s.medians_ms.begin(), s.medians_ms.end()));
  sc.hi = std::max(*std::max_element(s.q3_ms.begin(), s.q3_ms.end()),
                   *std::max_element(s.medians_ms.begin(), s.medians_ms.end()));
  if (sc.hi - sc.lo < 1e-12 * std::max(1.0, sc.hi)) {
    sc.lo *= 0.95;
    sc.hi *= 1.05;
  }
  return sc;
}

/// The interquartile band: q3 left to right, then q1 right to left (one run: a whisker).
std::string iqr_band(const series &s, const scales &sc) {
  if (sc.n == 1)
    return fmt::format("<line class=\"iqr\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" "
                       "y2=\"{2:.1f}\" stroke=\"#9db8da\" stroke-width=\"6\"/>",
                       sc.x(0), sc.y(s.q3_ms[0]), sc.y(s.q1_ms[0]));
  std::string pts;
  for (std::size_t i = 0; i < sc.n; ++i)
    pts += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", sc.x(static_cast<double>(i)),
                       sc.y(s.q3_ms[i]));
  for (std::size_t i = sc.n; i-- > 0;)
    pts += fmt::format(" {:.1f},{:.1f}", sc.x(static_cast<double>(i)), sc.y(s.q1_ms[i]));
  return fmt::format("<polygon class=\"iqr\" fill=\"#1f5fa8\" fill-opacity=\"0.15\" "
                     "stroke=\"none\" points=\"{}\"/>",
                     pts);
}

/// One point per run: its date, run id, median and IQR on hover, linked to its report.
std::string run_points(const series &s, const scales &sc, std::string_view reports_href) {
  std::string out;
  for (std::size_t i = 0; i < sc.n; ++i) {
    const report_facts &r = *s.runs[i];
    const std::string dot = fmt::format(
        "<circle class=\"pt\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"#1f5fa8\"><title>run {} "
        "of {}, {} \u00b7 {} \u00b7 median {} (IQR {} \u2013 {})</title></circle>",
        sc.x(static_cast<double>(i)), sc.y(s.medians_ms[i]), i + 1, sc.n,
        esc(r.started_at.empty() ? "start unknown" : r.started_at), esc(r.run_id),
        ms_text(s.medians_ms[i]), ms_text(s.q1_ms[i]), ms_text(s.q3_ms[i]));
    const std::string url = report_url(reports_href, r);
    out += url.empty() ? dot : fmt::format("<a href=\"{}\">{}</a>", esc(url), dot);
  }
  return out;
}

/// A vertical mark between run at-1 and run at, with what changed on hover.
std::string change_mark(const series &s, const scales &sc, const step &st, const char *kind,
                        const char *colour) {
  const double x = sc.x(static_cast<double>(st.at) - 0.5);
  return fmt::format("<g class=\"{}\"><line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" "
                     "stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/><title>{} at "
                     "run {} ({}): {} \u2192 {} ({:+.1f}%)</title></g>",
                     kind, x, x, pad_t, chart_h - pad_b, colour, kind, st.at + 1,
                     esc(s.runs[st.at]->run_id), ms_text(st.before), ms_text(st.after),
                     (st.ratio() - 1) * 100);
}

/// The steps' levels (red segments) and a mark at each step and jump.
std::string changes(const series &s, const scales &sc) {
  std::string out;
  std::size_t begin = 0;
  for (std::size_t k = 0; !s.steps.empty() && k <= s.steps.size(); ++k) {
    const std::size_t end = k < s.steps.size() ? s.steps[k].at : sc.n;
    const double level = k < s.steps.size() ? s.steps[k].before : s.steps.back().after;
    out += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" "
                       "stroke=\"#b22\" stroke-width=\"2\"/>",
                       sc.x(static_cast<double>(begin)), sc.x(static_cast<double>(end - 1)),
                       sc.y(level), sc.y(level));
    begin = end;
  }
  for (const step &st : s.steps)
    out += change_mark(s, sc, st, "step", "#b22");
  for (const step &st : s.jumps)
    out += change_mark(s, sc, st, "jump", "#c60");
  return out;
}

std::string date_of(const report_facts &r) { return r.started_at.substr(0, 10); }

std::string chart(const series &s, std::string_view reports_href) {
  const scales sc = scales_of(s);
  std::string points;
  for (std::size_t i = 0; i < sc.n; ++i)
    points += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", sc.x(static_cast<double>(i)),
                          sc.y(s.medians_ms[i]));
  std::string found;
  if (!s.steps.empty())
    found += fmt::format(", {} step(s)", s.steps.size());
  if (!s.jumps.empty())
    found += fmt::format(", {} jump(s)", s.jumps.size());
  return fmt::format(
      "<figure><figcaption><code>{}</code> — median per run (line) and interquartile range "
      "(band), {} runs{}</figcaption><svg class=\"trend\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}: median and interquartile range per "
      "run\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ddd\"/>"
      "<text x=\"2\" y=\"{:.1f}\">{}</text><text x=\"2\" y=\"{:.1f}\">{}</text>{}"
      "<polyline fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"1.5\" points=\"{}\"/>{}{}"
      "<text x=\"{}\" y=\"{}\">run 1 \u00b7 {}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">"
      "run {} \u00b7 {}</text></svg></figure>\n",
      esc(s.label), sc.n, found, chart_w, chart_h, chart_w, chart_h, esc(s.label), pad_l, pad_t,
      chart_w - pad_l - pad_r, chart_h - pad_t - pad_b, pad_t + 10, ms_text(sc.hi), chart_h - pad_b,
      ms_text(sc.lo), iqr_band(s, sc), points, changes(s, sc), run_points(s, sc, reports_href),
      pad_l, chart_h - 12, esc(date_of(*s.runs.front())), chart_w - pad_r, chart_h - 12, sc.n,
      esc(date_of(*s.runs.back())));
}

} // namespace

std::string render_charts(const std::vector<series> &all, std::string_view reports_href) {
  if (all.empty())
    return "<p class=\"muted\">No audited run with measured cells yet.</p>\n";
  std::string out;
  for (const series &s : all)
    out += chart(s, reports_href);
  return out;
}

} // namespace prereg::site::detail
