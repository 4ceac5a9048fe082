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
      else if (d.code == "measuring-process-stopped" && report.tool.analysis >= 4)
        why.emplace_back("stopped while timed");
    }
  if (c.n > 0 && std::isfinite(c.pct_ceiling) &&
      c.pct_ceiling > thresholds::excluded_above_ceiling_pct_for(report.tool.analysis))
    why.emplace_back(fmt::format("{:.0f}% of the ceiling", c.pct_ceiling));
  return join(why, ", ");
}

// Over named axes: the operation's axes in order, from the cells' keys, else the freeze record's
// descriptor, else the body's axes (when they are not rows, cols); empty for rows x cols.
std::vector<std::string> named_axes(const report_document &report) {
  std::vector<std::string> names;
  for (const report_cell &c : report.cells)
    if (c.key.named()) {
      for (const auto &a : c.key.shape)
        names.push_back(a.axis);
      return names;
    }
  for (const json &a :
       child(child(child(report.protocol.freeze, "operation"), "descriptor"), "axes"))
    if (a.is_string())
      names.push_back(a.get<std::string>());
  if (const json &axes = child(report.protocol.body, "axes"); names.empty() && axes.is_object())
    for (const auto &[axis, values] : axes.items())
      names.push_back(axis);
  if (names.size() == 2 && std::find(names.begin(), names.end(), "rows") != names.end() &&
      std::find(names.begin(), names.end(), "cols") != names.end())
    names.clear();
  return names;
}

// A named shape split into its leading extents (every axis but the last) and its last extent; an
// operation of one axis: that axis, and 0.
std::pair<std::vector<std::int64_t>, std::int64_t> split_shape(const std::vector<std::int64_t> &e) {
  if (e.size() == 1)
    return {e, 0};
  return {std::vector<std::int64_t>(e.begin(), e.end() - 1), e.back()};
}

// A key's extents; a rows x cols key in a named report (not a valid report, still drawn): rows,
// cols.
std::vector<std::int64_t> extents_of(const cell_key &k) {
  if (!k.named())
    return {k.rows, k.cols};
  std::vector<std::int64_t> e;
  for (const auto &a : k.shape)
    e.push_back(a.extent);
  return e;
}

// Every combination of the body's extents of the given axes, the first outermost.
void body_shapes(const view &v, std::size_t axis, std::vector<std::int64_t> &shape,
                 std::vector<std::vector<std::int64_t>> &out) {
  if (axis == v.axis_names.size()) {
    out.push_back(shape);
    return;
  }
  for (const json &e : child(child(*v.body, "axes"), v.axis_names[axis]))
    if (e.is_number_integer()) {
      shape.push_back(e.get<std::int64_t>());
      body_shapes(v, axis + 1, shape, out);
      shape.pop_back();
    }
}

// Over named axes: the leading extents and last extents the body declares and the cells name,
// sorted, and the operating point.
void read_named_shapes(view &v, const report_document &report) {
  // read_body took an axis named rows or cols for a rows x cols extent: not over named axes
  v.rows.clear();
  v.cols.clear();
  v.op.reset();
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::int64_t> scratch;
  body_shapes(v, 0, scratch, shapes);
  for (const report_cell &c : report.cells)
    shapes.push_back(extents_of(c.key));
  for (const auto &s : shapes) {
    auto [lead, last] = split_shape(s);
    add_unique(v.leading, lead);
    add_unique(v.cols, last);
  }
  std::sort(v.leading.begin(), v.leading.end());
  for (std::size_t i = 0; i < v.leading.size(); ++i)
    v.rows.push_back(static_cast<std::int64_t>(i));
  std::vector<std::int64_t> op;
  for (const auto &axis : v.axis_names)
    if (const auto e = integer(child(*v.body, "operating_point"), axis))
      op.push_back(*e);
  if (!op.empty() && op.size() == v.axis_names.size()) {
    auto [lead, last] = split_shape(op);
    const auto it = std::find(v.leading.begin(), v.leading.end(), lead);
    if (it != v.leading.end())
      v.op = {it - v.leading.begin(), last};
  }
}

cell_id id_of(const view &v, const cell_key &k) {
  std::string pass(to_string(k.pass));
  if (!is_named(v))
    return {k.arm, std::move(pass), k.rows, k.cols};
  auto [lead, last] = split_shape(extents_of(k));
  const auto it = std::find(v.leading.begin(), v.leading.end(), lead);
  return {k.arm, std::move(pass), it - v.leading.begin(), last};
}

} // namespace

view make_view(const report_document &report) {
  view v;
  v.report = &report;
  v.body = &report.protocol.body;
  v.renderer = report.tool.renderer;
  v.exploratory = report.exploratory;
  v.axis_names = named_axes(report);
  read_body(v, *v.body);
  if (is_named(v))
    read_named_shapes(v, report);
  read_memory_billing(v, report.environment);
  for (const report_cell &c : report.cells) {
    cell_id k = id_of(v, c.key);
    add_unique(v.arms, std::get<0>(k));
    add_unique(v.passes, std::get<1>(k));
    add_unique(v.rows, std::get<2>(k));
    add_unique(v.cols, std::get<3>(k));
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
  const auto it = v.excluded.find(id_of(v, cell.key));
  return it == v.excluded.end() ? nullptr : &it->second;
}

bool has_flag(const report_cell &cell, std::string_view flag) {
  return std::find(cell.flags.begin(), cell.flags.end(), flag) != cell.flags.end();
}

std::string shape_text(std::int64_t rows, std::int64_t cols) {
  return fmt::format("{}×{}", rows, cols);
}

bool is_named(const view &v) { return !v.axis_names.empty(); }

std::string key_shape_text(const cell_key &k) {
  return k.named() ? shape_label(k) : shape_text(k.rows, k.cols);
}

std::string row_text(const view &v, std::int64_t rows) {
  if (!is_named(v))
    return fmt::format("{}", rows);
  const auto &lead = v.leading.at(static_cast<std::size_t>(rows));
  std::string out;
  for (std::size_t i = 0; i < lead.size(); ++i)
    out += fmt::format("{}{}={}", i == 0 ? "" : " ",
                       i < v.axis_names.size() ? v.axis_names[i] : std::string("?"), lead[i]);
  return out;
}

std::string block_text(const view &v, std::int64_t cols, std::string_view sep) {
  if (!is_named(v))
    return fmt::format("cols{}{}", sep, cols);
  if (v.axis_names.size() == 1)
    return "";
  return fmt::format("{}{}{}", v.axis_names.back(), sep, cols);
}

std::string shape_text(const view &v, std::int64_t rows, std::int64_t cols) {
  if (!is_named(v))
    return shape_text(rows, cols);
  const std::string block = block_text(v, cols, "=");
  return row_text(v, rows) + (block.empty() ? "" : " " + block);
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
  if (is_named(v)) {
    const std::string block = block_text(v, cols, " = ");
    return pass + (block.empty() ? "" : ", " + block) +
           (v.op && v.op->second == cols
                ? fmt::format(" (operating point: {})", row_text(v, v.op->first))
                : std::string());
  }
  return fmt::format("{}, cols = {}", pass, cols) +
         (v.op && v.op->second == cols ? fmt::format(" (operating point: {} rows)", v.op->first)
                                       : std::string());
}

std::int64_t summary_cols(const view &v) { return v.op ? v.op->second : v.cols.front(); }

} // namespace prereg::render
