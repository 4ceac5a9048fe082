// The report as the renderers see it: dimensions in protocol order, cells by key.
#include "report/render/view.hpp"

#include "analysis/cell_stats.hpp"
#include "report/render/body.hpp"
#include "report/render/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace prereg::render {
namespace {

template <class T> void add_unique(std::vector<T> &v, const T &x) {
  if (std::find(v.begin(), v.end(), x) == v.end())
    v.push_back(x);
}

// The dimensions and the operating point the protocol body declares.
void read_body(view &v, const json &body) {
  for (const json &a : child(body, "arms"))
    if (a.is_object() && a.contains("id"))
      add_unique(v.arms, text(a, "id"));
  for (const json &p : child(body, "passes"))
    if (p.is_string())
      add_unique(v.passes, p.get<std::string>());
  for (const json &r : child(extents(body), "rows"))
    if (r.is_number_integer())
      add_unique(v.rows, r.get<std::int64_t>());
  for (const json &c : child(extents(body), "cols"))
    if (c.is_number_integer())
      add_unique(v.cols, c.get<std::int64_t>());
  const json &op = child(body, "operating_point");
  if (integer(op, "rows") && integer(op, "cols"))
    v.op = {*integer(op, "rows"), *integer(op, "cols")};
  v.unstable_ratio = number(child(body, "analysis"), "unstable_iqr_ratio");
}

// The arms whose memory_billing says their memory was not measured.
void read_memory_billing(view &v, const json &environment) {
  const json &outside = child(environment, "outside_arms");
  if (!outside.is_object())
    return;
  for (const auto &[arm, record] : outside.items())
    if (text(record, "memory_billing").starts_with("not measured"))
      v.memory_not_measured.insert(arm);
}

// Renderer 4: why a cell cannot decide a verdict under analysis 2 (verdict.cpp's rules: an error,
// a failed or missing correctness check, off-window work, a changed input, a reading beyond the
// physical margin over the ceiling), in a few words; empty when it can.
std::string exclusion_of(const report_document &report, const report_cell &c) {
  std::vector<std::string> why;
  if (c.error)
    why.emplace_back("failed");
  const auto check = std::find_if(report.correctness.begin(), report.correctness.end(),
                                  [&](const report_correctness &r) { return r.key == c.key; });
  if (c.n > 0 && (check == report.correctness.end() || !check->passed))
    why.emplace_back("failed correctness");
  for (const report_defect &d : report.defects)
    if (d.cell && *d.cell == c.key) {
      if (d.code == "off-window-work")
        why.emplace_back("work left pending off the window");
      else if (d.code == "input-mutated")
        why.emplace_back("changed an input");
    }
  if (c.n > 0 && std::isfinite(c.pct_ceiling) &&
      c.pct_ceiling > thresholds::excluded_above_ceiling_pct_for(report.tool.analysis))
    why.emplace_back(fmt::format("{:.0f}% of the ceiling", c.pct_ceiling));
  return join(why, ", ");
}

} // namespace

view make_view(const report_document &report) {
  view v;
  v.report = &report;
  v.body = &report.protocol.body;
  v.renderer = report.tool.renderer;
  v.exploratory = report.exploratory;
  read_body(v, *v.body);
  read_memory_billing(v, report.environment);
  for (const report_cell &c : report.cells) {
    cell_id k{c.key.arm, std::string(to_string(c.key.pass)), c.key.rows, c.key.cols};
    add_unique(v.arms, std::get<0>(k));
    add_unique(v.passes, std::get<1>(k));
    add_unique(v.rows, c.key.rows);
    add_unique(v.cols, c.key.cols);
    if (v.renderer >= 4)
      if (std::string why = exclusion_of(report, c); !why.empty())
        v.excluded.emplace(k, std::move(why));
    v.cells.emplace(std::move(k), &c);
  }
  std::sort(v.rows.begin(), v.rows.end());
  std::sort(v.cols.begin(), v.cols.end());
  return v;
}

const report_cell *find_cell(const view &v, const std::string &arm, const std::string &pass,
                             std::int64_t rows, std::int64_t cols) {
  const auto it = v.cells.find({arm, pass, rows, cols});
  return it == v.cells.end() ? nullptr : it->second;
}

std::optional<double> best_median(const view &v, const std::string &pass, std::int64_t rows,
                                  std::int64_t cols) {
  std::optional<double> best;
  for (const auto &other : v.arms)
    if (const report_cell *o = find_cell(v, other, pass, rows, cols)) {
      if (v.renderer >= 4 && (excluded_reason(v, *o) != nullptr || !o->flags.empty()))
        continue;
      if (const auto om = finite(o->median_ms))
        best = std::min(best.value_or(*om), *om);
    }
  return best;
}

const std::string *excluded_reason(const view &v, const report_cell &cell) {
  const auto it = v.excluded.find(
      {cell.key.arm, std::string(to_string(cell.key.pass)), cell.key.rows, cell.key.cols});
  return it == v.excluded.end() ? nullptr : &it->second;
}

bool has_flag(const report_cell &cell, std::string_view flag) {
  return std::find(cell.flags.begin(), cell.flags.end(), flag) != cell.flags.end();
}

std::string shape_text(std::int64_t rows, std::int64_t cols) {
  return fmt::format("{}×{}", rows, cols);
}

bool is_op_column(const view &v, std::int64_t rows, std::int64_t cols) {
  return v.op && v.op->first == rows && v.op->second == cols;
}

bool shows_memory_unmeasured(const view &v, const std::string &arm) {
  return v.renderer >= 3 && v.memory_not_measured.contains(arm);
}

bool has_kernel_clock(const view &v) {
  return std::any_of(v.report->cells.begin(), v.report->cells.end(),
                     [](const report_cell &c) { return c.kernel_clock.has_value(); });
}

std::string cols_heading(const view &v, const std::string &pass, std::int64_t cols) {
  return fmt::format("{}, cols = {}", pass, cols) +
         (v.op && v.op->second == cols ? fmt::format(" (operating point: {} rows)", v.op->first)
                                       : std::string());
}

std::int64_t summary_cols(const view &v) { return v.op ? v.op->second : v.cols.front(); }

} // namespace prereg::render
