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
    for (const auto &[label, ms] : r->medians) {
      auto [it, added] = index.emplace(label, out.size());
      if (added)
        out.push_back({label, {}, {}, {}});
      out[it->second].runs.push_back(r);
      out[it->second].medians_ms.push_back(ms);
    }
  for (series &s : out)
    s.steps = detect_steps(s.medians_ms);
  return out;
}

std::string render_steps(const std::vector<series> &all) {
  std::string rows;
  std::size_t n = 0;
  for (const series &s : all)
    for (const step &st : s.steps) {
      const report_facts &r = *s.runs[st.at];
      const double change = (st.ratio() - 1) * 100;
      rows += fmt::format(
          "<tr><td><code>{}</code></td><td>{} of {}: <code>{}</code></td>"
          "<td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td></tr>\n",
          esc(s.label), st.at + 1, s.runs.size(), esc(r.run_id), esc(r.commit.substr(0, 12)),
          esc(r.device), ms_text(st.before), ms_text(st.after),
          verdict_badge(change > 0 ? "refuted" : "confirmed", change > 0 ? "slower" : "faster") +
              fmt::format(" {:+.1f}%", change));
      ++n;
    }
  if (n == 0)
    return "<p class=\"muted\">No steps: no cell's median moved by 5% or more between levels "
           "(or fewer than 3 audited runs).</p>\n";
  return "<table><tr><th>cell</th><th>at run</th><th>commit</th><th>device</th><th>before</th>"
         "<th>after</th><th>change</th></tr>\n" +
         rows + "</table>\n";
}

namespace {

constexpr double chart_w = 640, chart_h = 130, pad_l = 64, pad_r = 8, pad_t = 8, pad_b = 18;

std::string chart(const series &s) {
  const auto [lo_it, hi_it] = std::minmax_element(s.medians_ms.begin(), s.medians_ms.end());
  double lo = *lo_it, hi = *hi_it;
  if (hi - lo < 1e-12 * std::max(1.0, hi)) {
    lo *= 0.95;
    hi *= 1.05;
  }
  const std::size_t n = s.medians_ms.size();
  const auto x = [&](double i) {
    return pad_l + (n > 1 ? i / static_cast<double>(n - 1) : 0.5) * (chart_w - pad_l - pad_r);
  };
  const auto y = [&](double v) {
    return pad_t + (1 - (v - lo) / (hi - lo)) * (chart_h - pad_t - pad_b);
  };
  std::string points;
  for (std::size_t i = 0; i < n; ++i)
    points +=
        fmt::format("{}{:.1f},{:.1f}", i ? " " : "", x(static_cast<double>(i)), y(s.medians_ms[i]));
  std::string levels;
  std::size_t begin = 0;
  for (std::size_t k = 0; !s.steps.empty() && k <= s.steps.size(); ++k) {
    const std::size_t end = k < s.steps.size() ? s.steps[k].at : n;
    const double level = k < s.steps.size() ? s.steps[k].before : s.steps.back().after;
    levels += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" "
                          "stroke=\"#b22\" stroke-width=\"2\"/>",
                          x(static_cast<double>(begin)), x(static_cast<double>(end - 1)), y(level),
                          y(level));
    begin = end;
  }
  return fmt::format(
      "<figure><figcaption><code>{}</code> — median per run, {} runs{}</figcaption>"
      "<svg class=\"trend\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
      "aria-label=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" "
      "stroke=\"#ddd\"/><text x=\"2\" y=\"{:.1f}\">{}</text><text x=\"2\" y=\"{:.1f}\">{}</text>"
      "<text x=\"{}\" y=\"{}\">run 1</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">run {}"
      "</text><polyline fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"1.5\" points=\"{}\"/>{}"
      "</svg></figure>\n",
      esc(s.label), n, s.steps.empty() ? "" : fmt::format(", {} step(s)", s.steps.size()), chart_w,
      chart_h, chart_w, chart_h, esc(s.label), pad_l, pad_t, chart_w - pad_l - pad_r,
      chart_h - pad_t - pad_b, pad_t + 10, ms_text(hi), chart_h - pad_b, ms_text(lo), pad_l,
      chart_h - 4, chart_w - pad_r, chart_h - 4, n, points, levels);
}

} // namespace

std::string render_charts(const std::vector<series> &all) {
  if (all.empty())
    return "<p class=\"muted\">No audited run with measured cells yet.</p>\n";
  std::string out;
  for (const series &s : all)
    out += chart(s);
  return out;
}

} // namespace prereg::site::detail
