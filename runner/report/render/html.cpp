// report.html: one self-contained page as a short driver over its named sections.
#include "report/render/html.hpp"
#include "report/render/device_state.hpp"

#include "report/render/body.hpp"
#include "report/render/escape.hpp"
#include "report/render/html_style.hpp"
#include "report/render/measuring_notes.hpp"
#include "report/render/phase_tables.hpp"
#include "report/render/result_tables.hpp"
#include "report/render/roofline.hpp"
#include "report/render/setup_tables.hpp"
#include "report/render/svg.hpp"
#include "report/render/verdict_tables.hpp"
#include "report/render/view.hpp"

#include <fmt/format.h>

namespace prereg::render {
namespace {

std::string badge(const std::string &cls, const std::string &label) {
  return "<span class=\"badge " + html(cls) + "\">" + html(label) + "</span>";
}

std::string html_list(const std::vector<std::string> &items, const std::string &cls) {
  std::string out = "<ul class=\"" + cls + "\">";
  for (const auto &i : items)
    out += "<li>" + html(i) + "</li>";
  return out + "</ul>\n";
}

std::string page_title(const view &v) {
  return (v.exploratory ? "EXPLORATORY: " : "") + text(*v.body, "title", "prereg report");
}

std::string head(const view &v) {
  const bool r2 = v.renderer >= 2;
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
         "'unsafe-inline'\">\n<meta name=\"viewport\" content=\"width=device-width, "
         "initial-scale=1\">\n<title>" +
         html(page_title(v)) + " · prereg report</title>\n<style>" + html_css +
         (r2 ? html_css_r2 : "") + "</style>\n</head>\n<body>\n" +
         (r2 ? fmt::format("<main data-renderer=\"{}\"{}>\n", v.renderer,
                           v.exploratory ? " data-exploratory=\"true\"" : "")
             : std::string("<main>\n"));
}

// The verdicts, defects, deviations and failed checks at a glance.
std::string badges(const view &v) {
  const report_document &report = *v.report;
  std::string out = "<div class=\"badges\">";
  for (const prediction_result &p : report.predictions)
    out +=
        badge(std::string(to_string(p.verdict)), p.id + ": " + std::string(to_string(p.verdict)));
  const correctness_summary cs = summarise_correctness(v);
  const std::size_t n_defects = report.defects.size();
  const std::size_t n_deviations = report.deviations.size();
  out += badge(n_defects ? "warn" : "info", fmt::format("{} defect(s)", n_defects));
  out += badge(n_deviations ? "warn" : "info", fmt::format("{} deviation(s)", n_deviations));
  out += badge(cs.failed ? "warn" : "info",
               fmt::format("{} of {} correctness check(s) failed", cs.failed, cs.checks));
  return out + "</div>\n";
}

// Header: what was tested, and the verdicts at a glance.
std::string header_section(const view &v) {
  const json &b = *v.body;
  const report_document &report = *v.report;
  std::string out = "<header>\n<h1>" + html(page_title(v)) + "</h1>\n";
  if (v.exploratory)
    out += "<p class=\"exploratory\">" + html(exploratory_text) + "</p>\n";
  out +=
      "<p class=\"sub\">protocol <code>" + html(text(b, "id", "?")) + "</code> · hash <code>" +
      html(report.protocol.hash.substr(0, 16)) + "…</code> · " +
      (v.exploratory ? std::string("<strong>not frozen</strong>")
                     : "attempt <strong>" + html(fmt::format("{}", report.attempt)) + "</strong>") +
      " · run <code>" + html(report.run.run_id) + "</code></p>\n";
  if (const std::string h = text(b, "hypothesis"); !h.empty())
    out += "<blockquote><strong>Hypothesis.</strong> " + html(h) + "</blockquote>\n";
  return out + badges(v) + "</header>\n";
}

std::string environment_section(const view &v) {
  return "<section id=\"environment\">\n<h2>Environment and instrument</h2>\n<div "
         "class=\"kvgrid\"><div>" +
         to_html(environment_table(v)) + to_html(run_table(v)) + "</div><div>" +
         to_html(instrument_table(v)) + to_html(design_table(v)) + to_html(arms_table(v)) +
         "</div></div>\n</section>\n";
}

std::string chart_figure(const view &v, const std::string &pass, std::int64_t cols,
                         const char *kind, const char *prefix) {
  const std::string id =
      fmt::format("{}-{}-{}-{}", prefix, kind, pass == "fwd" ? "fwd" : "fwdbwd", cols);
  return "<figure>" + render_chart(make_chart(v, pass, cols, kind), id) + "</figure>\n";
}

// Over named axes, what a results block stands for: the last axis (one axis: its shape).
std::string named_blocks(const view &v) {
  return v.axis_names.size() == 1 ? std::string("shape") : v.axis_names.back();
}

// Renderer 2: above the fold, the verdicts (badges), time per arm vs rows, and the speedup
// over the first arm with the fastest arm per shape ringed; the environment goes last.
// (The verdicts are the badges just above; their table stays under Predictions.)
std::string summary_section(const view &v) {
  std::string out = "<section id=\"summary\">\n<h2>Summary</h2>\n";
  if (!v.arms.empty() && !v.cols.empty()) {
    const std::int64_t cols = summary_cols(v);
    out += "<div class=\"charts\">\n";
    for (const auto &pass : v.passes)
      for (const char *kind : {"time", "speedup"})
        out += chart_figure(v, pass, cols, kind, "summary");
    out += "</div>\n<p class=\"caption\">Time per step (median, whiskers q1 to q3) and the "
           "speedup over " +
           html(v.arms.front()) + " (its median / the arm's) per " +
           std::string(is_named(v) ? "shape" : "rows") +
           "; a ring marks the fastest arm at each shape" +
           std::string(v.renderer >= 4 ? " (of the arms neither excluded nor flagged)" : "") +
           ". Every pass and " + (is_named(v) ? named_blocks(v) : std::string("cols")) +
           " is under Results.</p>\n";
    const auto excluded = excluded_notes(v, cols);
    if (!excluded.empty()) {
      out += "<p class=\"excluded\">Excluded from every verdict, never fastest, not drawn:</p>\n"
             "<ul class=\"excluded\">\n";
      for (const auto &[arm, note] : excluded)
        out += "<li><code>" + html(arm) + "</code> at " + html(note) + "</li>\n";
      out += "</ul>\n";
    }
  }
  if (v.renderer >= 6) // how the times were taken (docs/report.md)
    out += "<p class=\"caption\">How the times were taken:</p>\n<ul class=\"measuring\">\n"
           "<li>caches: " +
           html(cache_policy_text(*v.report)) +
           "</li>\n<li>copy ceiling: " + html(ceiling_source_text(*v.report)) + "</li>\n</ul>\n";
  return out + "</section>\n";
}

std::string predictions_section(const view &v) {
  std::string out = "<section id=\"predictions\">\n<h2>Predictions</h2>\n";
  if (v.report->predictions.empty())
    out += "<p>No predictions.</p>\n";
  for (const prediction_result &p : v.report->predictions) {
    const std::string &id = p.id;
    const std::string verdict(to_string(p.verdict));
    out += "<div class=\"prediction\"><h3>" + badge(verdict, verdict) + " " + html(id) + "</h3>\n";
    out += "<p><strong>Claim:</strong> " + html(p.claim) + "</p>\n";
    out += "<p><strong>Criterion:</strong> <code>" + html(p.expect) + "</code> at " +
           html(prediction_at(v, id)) + "</p>\n";
    out += "<p><strong>Reason:</strong> " + html(p.reason) + "</p>\n";
    out += to_html(prediction_cells(p)) + "</div>\n";
  }
  return out + "</section>\n";
}

// One results block's tables: time, % of ceiling, peak memory, kernel clock.
std::string results_tables(const view &v, const std::string &pass, std::int64_t cols) {
  std::string out = "<div class=\"tables\"><div><p class=\"caption\">Time per step, median "
                    "(IQR)</p>" +
                    to_html(time_table(v, pass, cols)) + "</div>";
  out += std::string("<div><p class=\"caption\">% of the copy ceiling (bound where ") +
         (has_roofs(v) ? "launch, bandwidth or compute" : "launch or bandwidth") + ")</p>" +
         to_html(results_table(v, pass, cols, pct_cell)) + "</div>";
  if (has_roofs(v))
    out += "<div><p class=\"caption\">" + html(roof_caption) + "</p>" +
           to_html(results_table(v, pass, cols, roof_cell)) + "</div>";
  out += "<div><p class=\"caption\">Peak memory [MB = 10<sup>6</sup> bytes]</p>" +
         to_html(results_table(v, pass, cols, peak_text(v))) + "</div>";
  if (has_kernel_clock(v))
    out += "<div><p class=\"caption\">Kernel time per step (kernel clock), median, and the "
           "gap's median share</p>" +
           to_html(results_table(v, pass, cols, kernel_cell)) + "</div>";
  return out + "</div>\n";
}

std::string results_block(const view &v, const std::string &pass, std::int64_t cols) {
  const std::string unstable_rule =
      v.unstable_ratio ? fmt::format(" (IQR/median > {:g})", *v.unstable_ratio) : std::string();
  std::string out =
      fmt::format("<section class=\"block\" data-pass=\"{}\" data-cols=\"{}\">\n<h3>{}</h3>\n",
                  html(pass), cols, html(cols_heading(v, pass, cols)));
  out += "<div class=\"charts\">\n";
  for (const char *kind : {"time", "pct", "peak"})
    out += chart_figure(v, pass, cols, kind, "chart");
  out += "</div>\n<p class=\"caption\">" +
         std::string(is_named(v) ? "One x position per shape" : "Log-scaled rows") +
         "; whiskers span the IQR (q1 to q3); "
         "hollow markers are unstable cells" +
         html(unstable_rule) +
         (v.op && v.op->second == cols ? "; the shaded band is the operating point" : "") +
         ". Hover a marker for its numbers.</p>\n";
  out += results_tables(v, pass, cols);
  const auto notes = flag_notes(v, pass, cols);
  if (!notes.empty()) {
    std::vector<std::string> items;
    for (const auto &[arm, note] : notes)
      items.push_back("⚠ " + arm + " at " + note);
    out += html_list(items, "flags");
  }
  return out + "</section>\n";
}

std::string results_section(const view &v) {
  std::string out = "<section id=\"results\">\n<h2>Results</h2>\n";
  for (const auto &pass : v.passes)
    for (const auto cols : v.cols)
      out += results_block(v, pass, cols);
  return out + "</section>\n";
}

std::string profile_section(const view &v) {
  return "<section id=\"profile\">\n<h2>Profile (kernel clock)</h2>\n<p>Per cell, its kernels "
         "by share of the step time (summed device time / summed step time), and the gap the "
         "kernels leave.</p>\n" +
         to_html(profile_table(v)) + "</section>\n";
}

std::string defects_and_deviations_section(const view &v) {
  const std::size_t n_defects = v.report->defects.size();
  const std::size_t n_deviations = v.report->deviations.size();
  std::string out = fmt::format("<section id=\"defects\">\n<h2>Defects ({})</h2>\n", n_defects);
  out +=
      n_defects == 0 ? "<p>The instrument reported no defects.</p>\n" : to_html(defects_table(v));
  out += "</section>\n";
  out += fmt::format("<section id=\"deviations\">\n<h2>Deviations ({})</h2>\n", n_deviations);
  out +=
      n_deviations == 0 ? "<p>The run followed the protocol.</p>\n" : to_html(deviations_table(v));
  return out + "</section>\n";
}

std::string correctness_section(const view &v) {
  const json &b = *v.body;
  const correctness_summary cs = summarise_correctness(v);
  std::string out = "<section id=\"correctness\">\n<h2>Correctness</h2>\n";
  out += fmt::format("<p>{} check(s) against the float64 reference, {} failed (tolerance rtol {}, "
                     "atol {}).</p>\n",
                     cs.checks, cs.failed, html(text(child(b, "correctness"), "rtol", "?")),
                     html(text(child(b, "correctness"), "atol", "?")));
  if (v.renderer >= 2)
    out += "<p class=\"caption\">" + html(tolerance_text) + "</p>\n";
  if (cs.checks > 0)
    out += to_html(cs.per_arm);
  if (!cs.failures.empty())
    out += "<p>Failures (excluded from verdicts):</p>\n" + html_list(cs.failures, "failures");
  return out + "</section>\n";
}

std::string phases_section(const view &v) {
  return "<section id=\"phases\">\n<h2>Where the time went</h2>\n<p>" + html(phases_line(v)) +
         "</p>\n" + to_html(phases_table(v)) + "</section>\n";
}

std::string footer(const view &v) {
  return v.exploratory
             ? "<footer>Rendered by prereg from report.json alone; this EXPLORATORY report is not "
               "signed. This page fetches nothing.</footer>\n</main>\n</body>\n</html>\n"
             : "<footer>Rendered by prereg from report.json alone; the signed record is "
               "report.json with report.dsse.json. This page fetches nothing.</footer>\n</main>\n"
               "</body>\n</html>\n";
}

} // namespace

std::string html_page(const report_document &report) {
  const view v = make_view(report);
  const bidi_scope bidi(v.renderer >= 6); // renderer 6: bidirectional controls shown as \u202e
  const bool r2 = v.renderer >= 2;
  std::string out = head(v) + header_section(v);
  out += r2 ? summary_section(v) : environment_section(v);
  out += predictions_section(v);
  out += results_section(v);
  out += roofline_html(v); // schema 8 only: every other report renders as before
  if (has_kernel_clock(v))
    out += profile_section(v);
  out += device_state_html(*v.report); // schema 7 only: every other report renders as before
  out += defects_and_deviations_section(v);
  out += correctness_section(v);
  if (has_phases(v))
    out += phases_section(v);
  if (r2)
    out += environment_section(v);
  return out + footer(v);
}

} // namespace prereg::render
