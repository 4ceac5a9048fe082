// leaderboard.md and leaderboard.html, rendered from leaderboard.json alone (renderer 1);
// quoted text escaped as a run page's is (report/render/escape.hpp).
#include "grade/board_page.hpp"
#include "grade/board.hpp"

#include "report/render/escape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace prereg::grade {
namespace {

using render::html;
using render::md;

std::string num(const json &v, const char *format = "{:.3f}") {
  if (!v.is_number())
    return "-";
  return fmt::format(fmt::runtime(format), v.get<double>());
}

std::string shape_of(const json &c) {
  if (c.contains("shape") && c["shape"].is_array()) {
    std::string out;
    for (const auto &a : c["shape"])
      out += fmt::format("{}{}={}", out.empty() ? "" : " ", a.value("axis", ""),
                         a.value("extent", std::int64_t{0}));
    return out;
  }
  return fmt::format("{}x{}", c.value("rows", std::int64_t{0}), c.value("cols", std::int64_t{0}));
}

/// "3/4 public, 2/2 held out": the cells whose correctness record passed.
std::string correct_text(const json &e) {
  int pub = 0, pub_ok = 0, held = 0, held_ok = 0;
  for (const auto &c : e.at("cells")) {
    const bool ok = c.value("correct", false);
    if (c.value("heldout", false)) {
      ++held;
      held_ok += ok;
    } else {
      ++pub;
      pub_ok += ok;
    }
  }
  std::string out = fmt::format("{}/{} public", pub_ok, pub);
  if (held > 0)
    out += fmt::format(", {}/{} held out", held_ok, held);
  return out;
}

std::string rank_text(const json &e) {
  return e.at("rank").is_number() ? std::to_string(e.at("rank").get<std::int64_t>()) : "-";
}

std::string score_text(const json &e) {
  if (e.value("excluded", false))
    return "0 (excluded)";
  return fmt::format("{} [{}, {}]", num(e.at("score")), num(e.at("score_lo")),
                     num(e.at("score_hi")));
}

/// The first exclusion's code and detail, and how many more.
std::string exclusion_text(const json &e) {
  const json &x = e.at("exclusions");
  if (x.empty())
    return "";
  const json &first = x.front();
  std::string out = fmt::format("{}: {}", first.value("code", ""), first.value("detail", ""));
  if (x.size() > 1)
    out += fmt::format(" (and {} more)", x.size() - 1);
  return out;
}

/// The re-timing (docs/grading.md, "The re-timing"): "yes", "no" or "-" (none judged).
std::string retime_state(const json &e) {
  const json &r = e.at("retime");
  if (r.is_null() || !r.at("confirmed").is_boolean())
    return "-";
  return r.at("confirmed").get<bool>() ? "yes" : "no";
}

/// "confirmed: median 0.95 ms, then 0.91 ms in a second process (fwd 256x4096)", and when it
/// was repeated ", the last of 2 re-timings".
std::string retime_text(const json &e) {
  const json &r = e.at("retime");
  if (r.is_null())
    return "not re-timed";
  if (!r.at("confirmed").is_boolean())
    return "re-timed, not judged";
  const auto median = [](const json &side) {
    return side.is_null() ? std::string("-") : num(side.at("median"), "{:.4g}");
  };
  const std::size_t earlier = r.value("earlier", json::array()).size();
  return fmt::format(
      "{}: median {} ms, then {} ms in a second process ({} {}){}",
      r.at("confirmed").get<bool>() ? "confirmed" : "not confirmed", median(r.at("first")),
      median(r.at("second")), r.at("cell").value("pass", ""), shape_of(r.at("cell")),
      earlier == 0 ? std::string() : fmt::format(", the last of {} re-timings", earlier + 1));
}

/// The score's interval as a bar on a common axis [0, top].
std::string interval_svg(const json &e, double top) {
  if (e.value("excluded", false) || !e.at("score_lo").is_number() || !(top > 0))
    return "";
  const auto x = [&](double v) { return 4.0 + 192.0 * std::clamp(v / top, 0.0, 1.0); };
  const double lo = e.at("score_lo").get<double>(), hi = e.at("score_hi").get<double>();
  const double s = e.at("score").get<double>();
  return fmt::format("<svg class=\"interval\" width=\"200\" height=\"14\" role=\"img\"><title>{} "
                     "[{}, {}]</title><line x1=\"{:.1f}\" y1=\"7\" x2=\"{:.1f}\" y2=\"7\" "
                     "stroke=\"#357\" stroke-width=\"4\"/><circle cx=\"{:.1f}\" cy=\"7\" r=\"4\" "
                     "fill=\"#135\"/></svg>",
                     num(e.at("score")), num(e.at("score_lo")), num(e.at("score_hi")), x(lo), x(hi),
                     x(s));
}

std::string title_of(const json &b) {
  const json &body = b.at("task").at("body");
  return fmt::format("{} ({}): leaderboard {}", body.value("id", ""),
                     b.at("task").value("hash", "").substr(0, 12),
                     b.at("grade").value("grade_id", ""));
}

std::string score_rule_text(const json &b) {
  const json &t = b.at("task").at("body").at("task");
  if (t.value("score", "") == "speedup_at")
    return fmt::format("the speed-up over `{}` at one cell", t.value("baseline", ""));
  return fmt::format("the geometric mean over every graded cell of the speed-up over `{}`",
                     t.value("baseline", ""));
}

} // namespace

std::string board_sections_html(const json &b) {
  double top = 0;
  for (const auto &e : b.at("entries"))
    if (e.at("score_hi").is_number())
      top = std::max(top, e.at("score_hi").get<double>());
  std::string out = fmt::format(
      "<p>Task <code>{}</code>, graded at {}. Score: {} (0 for an excluded submission), with its "
      "{}% bootstrap interval; ranks separate only submissions whose intervals do not "
      "overlap.</p>\n",
      html(b.at("task").value("hash", "")), html(b.at("grade").value("graded_at", "")),
      html(score_rule_text(b)),
      fmt::format("{:g}", 100 * b.at("task").at("body").at("analysis").value("confidence", 0.95)));
  out += "<h2>Leaderboard</h2>\n<table class=\"board\"><thead><tr><th>rank</th><th>name</th>"
         "<th>score [interval]</th><th>interval</th><th>correct cells</th><th>re-timed</th>"
         "<th>submission</th><th>excluded because</th></tr></thead><tbody>\n";
  for (const auto &e : b.at("entries"))
    out += fmt::format(
        "<tr data-name=\"{}\" data-excluded=\"{}\"><td class=\"rank\">{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td class=\"retime\" data-confirmed=\"{}\" "
        "title=\"{}\">{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
        html(e.value("name", "")), e.value("excluded", false) ? "true" : "false",
        html(rank_text(e)), html(e.value("name", "")), html(score_text(e)), interval_svg(e, top),
        html(correct_text(e)), retime_state(e), html(retime_text(e)), retime_state(e),
        html(e.at("submission").value("submission_id", "")), html(exclusion_text(e)));
  out += "</tbody></table>\n<h2>Per cell</h2>\n";
  for (const auto &e : b.at("entries")) {
    out += fmt::format("<h3>{}</h3>\n<table class=\"cells\"><tr><th>pass</th><th>shape</th>"
                       "<th>held out</th><th>baseline ms</th><th>submission ms</th><th>floor "
                       "ms</th><th>speed-up</th><th>correct</th></tr>\n",
                       html(e.value("name", "")));
    for (const auto &c : e.at("cells"))
      out +=
          fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                      "<td>{}</td><td>{}</td></tr>\n",
                      html(c.value("pass", "")), html(shape_of(c)),
                      c.value("heldout", false) ? "yes" : "no", num(c.at("baseline_ms"), "{:.4g}"),
                      num(c.at("submission_ms"), "{:.4g}"), num(c.at("floor_ms"), "{:.4g}"),
                      num(c.at("speedup")), c.value("correct", false) ? "yes" : "no");
    out += fmt::format("</table>\n<p class=\"retime\">Re-timing: {}</p>\n", html(retime_text(e)));
  }
  if (const auto h = b.find("heldout"); h != b.end())
    out += fmt::format("<h2>Held-out reveal</h2>\n<p>Commitment <code>{}</code>; revealed: "
                       "<code>{}</code></p>\n",
                       html(h->value("commitment", "")), html(h->at("reveal").dump()));
  out += "<h2>Gradings</h2>\n<table class=\"gradings\"><tr><th>grading</th><th>nonce</th>"
         "<th>baseline run</th></tr>\n";
  for (const auto &g : b.at("gradings"))
    out += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
                       html(g.value("grade_id", "")), html(g.value("nonce", "")),
                       html(g.at("baseline").value("run_id", "")));
  return out + "</table>\n";
}

std::string render_board_markdown(const json &b) {
  std::string out = fmt::format("# {}\n\nTask `{}`, graded at {}. Score: {} (0 for an excluded "
                                "submission), with its bootstrap interval; ranks separate only "
                                "submissions whose intervals do not overlap.\n\n",
                                md(title_of(b)), b.at("task").value("hash", ""),
                                b.at("grade").value("graded_at", ""), score_rule_text(b));
  out += "| rank | name | score [interval] | correct cells | re-timed | submission | excluded "
         "because |\n| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto &e : b.at("entries"))
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", rank_text(e),
                       md(e.value("name", "")), score_text(e), correct_text(e), md(retime_text(e)),
                       md(e.at("submission").value("submission_id", "")), md(exclusion_text(e)));
  if (const auto h = b.find("heldout"); h != b.end())
    out += fmt::format("\nHeld-out commitment `{}`, revealed: {}\n", h->value("commitment", ""),
                       md(h->at("reveal").dump()));
  out += "\n| grading | nonce | baseline run |\n| --- | --- | --- |\n";
  for (const auto &g : b.at("gradings"))
    out += fmt::format("| {} | `{}` | {} |\n", md(g.value("grade_id", "")), g.value("nonce", ""),
                       md(g.at("baseline").value("run_id", "")));
  return out;
}

std::string render_board_html(const json &b) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta "
      "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'\"><title>{}</title><style>body{{font-family:sans-serif;margin:2em}}"
      "table{{border-collapse:collapse;margin-bottom:1em}}td,th{{border:1px solid #999;padding:2px "
      "6px}}tr[data-excluded=\"true\"]{{color:#777}}</style></head><body>\n<h1>{}</h1>\n{}"
      "</body></html>\n",
      html(title_of(b)), html(title_of(b)), board_sections_html(b));
}

} // namespace prereg::grade
