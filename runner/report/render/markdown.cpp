// report.md: the page as a short driver over its named sections.
#include "report/render/markdown.hpp"
#include "report/render/device_state.hpp"
#include "report/render/roofline.hpp"

#include "base/stats.hpp"
#include "report/render/body.hpp"
#include "report/render/escape.hpp"
#include "report/render/format.hpp"
#include "report/render/measuring_notes.hpp"
#include "report/render/phase_tables.hpp"
#include "report/render/result_tables.hpp"
#include "report/render/setup_tables.hpp"
#include "report/render/verdict_tables.hpp"
#include "report/render/view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace prereg::render {
namespace {

std::string md_list(const std::vector<std::string> &items) {
  std::string out;
  for (const auto &i : items)
    out += "- " + md(i) + "\n";
  return out;
}

std::string header_section(const view &v) {
  const json &b = *v.body;
  const report_document &report = *v.report;
  std::string out = "# " + std::string(v.exploratory ? "EXPLORATORY: " : "") +
                    md(text(b, "title", "prereg report")) + "\n\n";
  if (v.exploratory)
    out +=
        fmt::format("> **{}**\n\nReport of protocol {} (not frozen), run {}.\n\n",
                    md(exploratory_text), md_code(text(b, "id", "?")), md_code(report.run.run_id));
  else
    out += fmt::format("Report of protocol {}, attempt **{}**, run {}.\n\n",
                       md_code(text(b, "id", "?")), report.attempt, md_code(report.run.run_id));
  if (const std::string h = text(b, "hypothesis"); !h.empty())
    out += "> **Hypothesis.** " + md(h) + "\n\n";
  return out;
}

// Verdicts first: what the reader came for.
std::string verdicts_section(const view &v) {
  const report_document &report = *v.report;
  std::string out = "## Verdicts\n\n";
  if (report.predictions.empty())
    out += "No predictions.\n\n";
  else
    out += to_markdown(prediction_summary(v)) + "\n";
  const correctness_summary cs = summarise_correctness(v);
  out += fmt::format("{} defect(s), {} deviation(s), {} of {} correctness check(s) failed.\n\n",
                     report.defects.size(), report.deviations.size(), cs.failed, cs.checks);
  return out;
}

std::string environment_and_design_section(const view &v) {
  std::string e = "## Environment and instrument\n\n";
  e += to_markdown(environment_table(v)) + "\n";
  e += to_markdown(instrument_table(v)) + "\n";
  e += to_markdown(run_table(v)) + "\n";
  e += "## Design\n\n" + to_markdown(design_table(v)) + "\n" + to_markdown(arms_table(v)) + "\n";
  return e;
}

// Renderer 2: the summary first (the environment goes at the end).
std::string summary_section(const view &v) {
  const std::int64_t cols = summary_cols(v);
  std::string out = "## Summary\n\n";
  for (const auto &pass : v.passes) {
    out += fmt::format("Speedup over {} (its median / the arm's), {}{}; the fastest arm "
                       "per shape in bold{}:\n\n",
                       md_code(v.arms.front()), md(pass),
                       md(v.axis_names.size() == 1 ? "" : ", " + block_text(v, cols, " ")),
                       v.renderer >= 4 ? " (of the arms neither excluded nor flagged ⚠)" : "");
    out += to_markdown(speedup_table(v, pass, cols)) + "\n";
  }
  const auto excluded = excluded_notes(v, cols);
  if (!excluded.empty()) {
    out += "Excluded from every verdict, never fastest (docs/analysis.md):\n\n";
    for (const auto &[arm, note] : excluded)
      out += "- " + md_code(arm) + " at " + md(note) + "\n";
    out += "\n";
  }
  if (v.renderer >= 6) // how the times were taken (docs/report.md)
    out += "How the times were taken:\n\n- caches: " + md(cache_policy_text(*v.report)) +
           "\n- copy ceiling: " + md(ceiling_source_text(*v.report)) + "\n\n";
  return out;
}

std::string results_block(const view &v, const std::string &pass, std::int64_t cols) {
  std::string out;
  if (v.cols.size() > 1 || v.op)
    out += "### " + md(cols_heading(v, pass, cols)) + "\n\n";
  out += "Time per step, median (IQR):\n\n" + to_markdown(time_table(v, pass, cols));
  out +=
      std::string(has_roofs(v) ? "\n% of the copy ceiling (bound where launch, bandwidth or "
                                 "compute):\n\n"
                               : "\n% of the copy ceiling (bound where launch or bandwidth):\n\n") +
      to_markdown(results_table(v, pass, cols, pct_cell));
  if (has_roofs(v))
    out += "\n" + std::string(roof_caption) + ":\n\n" +
           to_markdown(results_table(v, pass, cols, roof_cell));
  out += "\nPeak memory (MB = 10^6 bytes):\n\n" +
         to_markdown(results_table(v, pass, cols, peak_text(v)));
  if (has_kernel_clock(v))
    out += "\nKernel time per step (kernel clock), median, and the gap's median share of the "
           "step:\n\n" +
           to_markdown(results_table(v, pass, cols, kernel_cell));
  const auto notes = flag_notes(v, pass, cols);
  if (!notes.empty()) {
    out += "\n⚠ Flagged cells:\n\n";
    for (const auto &[arm, note] : notes)
      out += "- " + md_code(arm) + " at " + md(note) + "\n";
  }
  return out + "\n";
}

std::string results_section(const view &v) {
  std::string out;
  for (const auto &pass : v.passes) {
    out += "## Results: " + md(pass) + "\n\n";
    for (const auto cols : v.cols)
      out += results_block(v, pass, cols);
  }
  return out;
}

std::string pct_or_na(double x) { return std::isfinite(x) ? pct_text(x) : std::string("n/a"); }

// The median of a region's samples as time text, or "n/a".
std::string region_median_text(const std::map<std::string, std::vector<double>> &samples,
                               const std::string &label) {
  const auto ms = samples.find(label);
  const double med = ms == samples.end() || ms->second.empty()
                         ? std::numeric_limits<double>::quiet_NaN()
                         : median(ms->second);
  return std::isfinite(med) ? md(time_text(med)) : std::string("n/a");
}

std::string region_events_table(const report_document &report) {
  std::string out = "| arm | pass | shape | region | share | interval | median region time |\n"
                    "| --- | --- | --- | --- | ---: | ---: | ---: |\n";
  for (const report_cell &c : report.cells)
    for (const region_share &r : c.region_shares)
      out += fmt::format("| {} | {} | {} | {} | {} | {} .. {} | {} |\n", md_code(c.key.arm),
                         md(std::string(to_string(c.key.pass))), md(key_shape_text(c.key)),
                         md_code(r.label), pct_or_na(r.share_pct), pct_or_na(r.lo_pct),
                         pct_or_na(r.hi_pct), region_median_text(c.regions_ms, r.label));
  return out + "\n";
}

// With the kernel clock's region marks: the same regions by the kernels that ran in them.
std::string region_kernels_table(const report_document &report) {
  std::string out =
      "By the kernel clock: the kernels that ran between each region's marks, as a share "
      "of the step's kernel time (100 x their summed time / the step's summed kernel "
      "time), with the interval from the same resampled samples, beside the events' "
      "share of the step. A region whose events share is far above its kernel share "
      "spends its time launching, not computing.\n\n";
  out += "| arm | pass | shape | region | events share | kernel share | interval | median "
         "region kernel time |\n"
         "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n";
  for (const report_cell &c : report.cells)
    for (const region_share &r : c.region_shares) {
      if (!r.kernel)
        continue;
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} .. {} | {} |\n", md_code(c.key.arm),
                         md(std::string(to_string(c.key.pass))), md(key_shape_text(c.key)),
                         md_code(r.label), pct_or_na(r.share_pct), pct_or_na(r.kernel_share_pct),
                         pct_or_na(r.kernel_lo_pct), pct_or_na(r.kernel_hi_pct),
                         region_median_text(c.region_kernels_ms, r.label));
    }
  return out + "\n";
}

bool has_kernel_regions(const report_document &report) {
  return std::any_of(report.cells.begin(), report.cells.end(), [](const report_cell &c) {
    return std::any_of(c.region_shares.begin(), c.region_shares.end(),
                       [](const region_share &r) { return r.kernel; });
  });
}

// Only reports with regions get this section: every other report renders as before.
std::string region_shares_section(const report_document &report) {
  if (std::none_of(report.cells.begin(), report.cells.end(),
                   [](const report_cell &c) { return !c.region_shares.empty(); }))
    return "";
  std::string out = "## Region shares\n\n";
  out += "Each named region's time as a share of the step: 100 x its summed time / the "
         "step's summed time over the samples, with the percentile-bootstrap interval at the "
         "protocol's confidence. Regions may nest, so shares need not sum to 100.\n\n";
  out += region_events_table(report);
  if (has_kernel_regions(report))
    out += region_kernels_table(report);
  return out;
}

std::string predictions_section(const view &v) {
  std::string out = "## Predictions\n\n";
  for (const prediction_result &p : v.report->predictions) {
    const std::string &id = p.id;
    const std::string verdict(to_string(p.verdict));
    out += fmt::format("### {} — {}\n\n", md(id), md(verdict));
    out += "- **Claim:** " + md(p.claim) + "\n";
    out += "- **Criterion:** " + md_code(p.expect) + " at " + md(prediction_at(v, id)) + "\n";
    out += "- **Verdict:** **" + md(verdict) + "** — " + md(p.reason) + "\n\n";
    out += to_markdown(prediction_cells(p)) + "\n";
  }
  return out;
}

std::string profile_section(const view &v) {
  return "## Profile (kernel clock)\n\nPer cell, its kernels by share of the step time "
         "(summed device time / summed step time), and the gap the kernels leave:\n\n" +
         to_markdown(profile_table(v)) + "\n";
}

std::string defects_and_deviations_section(const view &v) {
  const report_document &report = *v.report;
  std::string out = fmt::format("## Defects ({})\n\n", report.defects.size());
  out += report.defects.empty() ? "The instrument reported no defects.\n\n"
                                : to_markdown(defects_table(v)) + "\n";
  out += fmt::format("## Deviations ({})\n\n", report.deviations.size());
  out += report.deviations.empty() ? "The run followed the protocol.\n\n"
                                   : to_markdown(deviations_table(v)) + "\n";
  return out;
}

std::string correctness_section(const view &v) {
  const json &b = *v.body;
  const correctness_summary cs = summarise_correctness(v);
  std::string out = "## Correctness\n\n";
  out += fmt::format("{} check(s) against the float64 reference, {} failed (tolerance rtol {}, "
                     "atol {}).\n\n",
                     cs.checks, cs.failed, text(child(b, "correctness"), "rtol", "?"),
                     text(child(b, "correctness"), "atol", "?"));
  if (v.renderer >= 2)
    out += md(tolerance_text) + "\n\n";
  if (cs.checks > 0)
    out += to_markdown(cs.per_arm) + "\n";
  if (!cs.failures.empty())
    out += "Failures (excluded from verdicts):\n\n" + md_list(cs.failures) + "\n";
  return out;
}

std::string phases_section(const view &v) {
  return "## Where the time went\n\n" + md(phases_line(v)) + "\n\n" + to_markdown(phases_table(v)) +
         "\n";
}

std::string footer(const view &v) {
  return v.exploratory ? "---\n\nRendered from report.json alone; this EXPLORATORY report is not "
                         "signed.\n"
                       : "---\n\nRendered from report.json alone; the signed record is "
                         "report.json with report.dsse.json.\n";
}

} // namespace

std::string markdown_page(const report_document &report) {
  const view v = make_view(report);
  const bidi_scope bidi(v.renderer >= 6); // renderer 6: bidirectional controls shown as \u202e
  const bool r2 = v.renderer >= 2;
  std::string out = header_section(v) + verdicts_section(v);
  if (!r2)
    out += environment_and_design_section(v);
  else if (!v.arms.empty() && !v.cols.empty())
    out += summary_section(v);
  out += results_section(v);
  out += region_shares_section(report);
  out += predictions_section(v);
  if (has_kernel_clock(v))
    out += profile_section(v);
  out += device_state_markdown(*v.report); // schema 7 only: every other report renders as before
  out += defects_and_deviations_section(v);
  out += correctness_section(v);
  if (has_phases(v))
    out += phases_section(v);
  if (r2)
    out += environment_and_design_section(v);
  return out + footer(v);
}

} // namespace prereg::render
