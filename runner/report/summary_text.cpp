// The summary of a run for the terminal (summary_text.hpp).
#include "report/summary_text.hpp"

#include "prereg/error.hpp"
#include "report/render/body.hpp"
#include "report/render/measuring_notes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

namespace prereg {
namespace {

constexpr std::size_t claim_bytes = 72;   ///< a claim is cut after this many bytes
constexpr std::size_t reason_bytes = 160; ///< a failure's reason likewise
constexpr std::size_t cells_listed = 3;   ///< cells named per arm; the rest counted

std::string shape_of(const cell_key &k) {
  return fmt::format("{} {}", to_string(k.pass), shape_label(k));
}

/// One arm's cells of one kind (excluded, errored, skipped) and the first cell's reason.
struct arm_cells {
  std::vector<std::string> cells;
  std::string reason;
};

/// (arm, its cells) in first-seen order.
using by_arm = std::vector<std::pair<std::string, arm_cells>>;

void add(by_arm &groups, const cell_key &k, const std::string &reason) {
  auto g =
      std::find_if(groups.begin(), groups.end(), [&](const auto &e) { return e.first == k.arm; });
  if (g == groups.end()) {
    groups.push_back({k.arm, {{}, reason}});
    g = groups.end() - 1;
  }
  g->second.cells.push_back(shape_of(k));
}

/// "  KIND      ARM at N cells (a, b, c, +M): REASON", one line per arm.
void group_lines(const char *kind, const by_arm &groups, std::vector<std::string> &out) {
  for (const auto &[arm, g] : groups) {
    std::vector<std::string> named(g.cells.begin(),
                                   g.cells.begin() + std::min(g.cells.size(), cells_listed));
    if (g.cells.size() > cells_listed)
      named.push_back(fmt::format("+{}", g.cells.size() - cells_listed));
    const std::string where =
        g.cells.size() == 1 ? g.cells.front()
                            : fmt::format("{} cells ({})", g.cells.size(), fmt::join(named, ", "));
    out.push_back(fmt::format("  {:<9} {} at {}: {}", kind, arm, where,
                              message_excerpt(g.reason, reason_bytes)));
  }
}

std::string header(const report_document &r) {
  const json &body = r.protocol.body;
  std::map<std::string, int> counts;
  for (const auto &p : r.predictions)
    ++counts[std::string(to_string(p.verdict))];
  std::vector<std::string> tally;
  for (const char *v : {"confirmed", "refuted", "inconclusive"})
    if (counts[v] > 0)
      tally.push_back(fmt::format("{} {}", counts[v], v));
  const auto revision = render::integer(body, "revision");
  return fmt::format("prereg: {}{} revision {}, {} {}{}: {} prediction(s){}{}",
                     r.exploratory ? "EXPLORATORY try of " : "", render::text(body, "id", "?"),
                     revision.value_or(1), r.exploratory ? "report" : "run", r.run.run_id,
                     r.exploratory ? "" : fmt::format(" (attempt {})", r.attempt),
                     r.predictions.size(), tally.empty() ? "" : ": ", fmt::join(tally, ", "));
}

void prediction_lines(const report_document &r, std::vector<std::string> &out) {
  std::size_t width = 0;
  for (const auto &p : r.predictions)
    width = std::max(width, p.id.size());
  for (const auto &p : r.predictions)
    out.push_back(fmt::format("  {:<{}}  {:<12}  {}", p.id, width, to_string(p.verdict),
                              message_excerpt(p.claim, claim_bytes)));
}

/// Excluded (failed correctness), errored and skipped cells, grouped by arm; other deviations
/// one line each.
void failure_lines(const report_document &r, std::vector<std::string> &out) {
  by_arm excluded, errored, skipped;
  for (const auto &c : r.correctness)
    if (!c.passed)
      add(excluded, c.key, "failed correctness: " + c.detail);
  for (const auto &c : r.cells)
    if (c.error)
      add(errored, c.key, *c.error);
  std::vector<std::string> other;
  for (const auto &d : r.deviations) {
    if (d.kind == "cell-skipped" && d.cell)
      add(skipped, *d.cell, d.message);
    else if (d.kind != "arm-excluded" && d.kind != "arm-error")
      other.push_back(fmt::format("  {:<9} {}: {}", "deviation", d.kind,
                                  message_excerpt(d.message, reason_bytes)));
  }
  group_lines("excluded", excluded, out);
  group_lines("errored", errored, out);
  group_lines("skipped", skipped, out);
  out.insert(out.end(), other.begin(), other.end());
}

void defect_lines(const report_document &r, std::vector<std::string> &out) {
  if (r.defects.empty())
    return;
  std::vector<std::pair<std::string, int>> codes;
  for (const auto &d : r.defects) {
    auto c =
        std::find_if(codes.begin(), codes.end(), [&](const auto &e) { return e.first == d.code; });
    if (c == codes.end())
      codes.emplace_back(d.code, 1);
    else
      ++c->second;
  }
  std::vector<std::string> parts;
  for (const auto &[code, n] : codes)
    parts.push_back(n == 1 ? code : fmt::format("{} x{}", code, n));
  out.push_back(fmt::format("  {:<9} {} ({}); report.md, Defects", "defects", r.defects.size(),
                            fmt::join(parts, ", ")));
}

} // namespace

std::vector<std::string> terminal_summary(const report_document &report,
                                          const std::filesystem::path &folder) {
  std::vector<std::string> out = {header(report)};
  prediction_lines(report, out);
  failure_lines(report, out);
  defect_lines(report, out);
  out.push_back(fmt::format("  {:<9} {}", "caches", render::cache_policy_text(report)));
  out.push_back(fmt::format("  {:<9} {}", "ceiling", render::ceiling_source_text(report)));
  out.push_back(fmt::format("  {:<9} {}", "report", (folder / "report.md").string()));
  for (auto &line : out)
    line = escape_control(line);
  return out;
}

} // namespace prereg
