// The charts of report.html as data: per arm a series of points over rows, made from the view.
#include "report/render/chart.hpp"

#include "report/render/format.hpp"

#include <fmt/format.h>

namespace prereg::render {
namespace {

std::string time_tick(double ms) {
  const time_unit u = unit_for(ms);
  return fmt::format("{:.3g} {}", ms * u.per_ms, u.name);
}
std::string pct_tick(double pct) { return fmt::format("{:g}%", pct); }
std::string ratio_tick(double r) { return fmt::format("{:g}x", r); }
std::string mb_tick(double mb) {
  return mb < 1.0 ? fmt::format("{:g}", mb) : fmt::format("{:.0f}", mb);
}

// Over named axes: the x axis' shapes and title ("b, n (d = 64)").
void name_xs(chart &c, const view &v, std::int64_t cols) {
  for (const auto r : v.rows)
    c.x_names.push_back(row_text(v, r));
  const std::size_t lead = v.axis_names.size() == 1 ? 1 : v.axis_names.size() - 1;
  c.x_title =
      join({v.axis_names.begin(), v.axis_names.begin() + static_cast<std::ptrdiff_t>(lead)}, ", ");
  if (const std::string block = block_text(v, cols, " = "); !block.empty())
    c.x_title += " (" + block + ")";
}

// The chart's frame by kind: title, y axis, reference line, ticks; no series yet.
chart chart_frame(const view &v, const std::string &pass, std::int64_t cols,
                  const std::string &kind) {
  chart c;
  c.kind = kind;
  c.pass = pass;
  c.cols = cols;
  c.xs = v.rows;
  if (is_named(v))
    name_xs(c, v, cols);
  if (v.op && v.op->second == cols)
    c.op_x = v.op->first;
  // "pass · cols 1024"; over named axes "pass · d = 64" (one axis: the pass alone)
  std::string where = pass;
  if (const std::string block = block_text(v, cols, is_named(v) ? " = " : " "); !block.empty())
    where += " · " + block;
  if (kind == "time") {
    c.title = fmt::format("Time per step · {}", where);
    c.y_label = "median time per step (log)";
    c.tick_text = time_tick;
  } else if (kind == "pct") {
    c.title = fmt::format("% of copy ceiling · {}", where);
    c.y_label = "% of measured ceiling";
    c.log_y = false;
    c.reference_y = 100.0;
    c.reference_label = "ceiling";
    c.tick_text = pct_tick;
  } else if (kind == "speedup") {
    c.title = fmt::format("Speedup over {} · {}", v.arms.front(), where);
    c.y_label = "baseline median / arm median (log)";
    c.reference_y = 1.0;
    c.reference_label = "baseline";
    c.tick_text = ratio_tick;
  } else {
    c.title = fmt::format("Peak memory · {}", where);
    c.y_label = "peak MB (log)";
    c.tick_text = mb_tick;
  }
  return c;
}

std::string point_title(const report_cell &cell, const std::string &what) {
  std::string t = fmt::format("{} · {} {} · {}", cell.key.arm, to_string(cell.key.pass),
                              key_shape_text(cell.key), what);
  t += fmt::format(" · n = {}", cell.n);
  if (!cell.flags.empty())
    t += " · flags: " + join(cell.flags, ", ");
  return t;
}

// Renderer 4: a cell the verdicts exclude is not drawn.
bool is_excluded(const view &v, const report_cell &cell) {
  return v.renderer >= 4 && excluded_reason(v, cell) != nullptr;
}

std::optional<point> time_point(const report_cell &cell, std::int64_t r) {
  const auto m = finite(cell.median_ms);
  if (!m)
    return std::nullopt;
  return point{
      r,
      *m,
      finite(cell.q1_ms),
      finite(cell.q3_ms),
      has_flag(cell, "unstable"),
      point_title(cell, fmt::format("median {}, IQR {} to {}", time_text(*m),
                                    time_text(finite(cell.q1_ms)), time_text(finite(cell.q3_ms))))};
}

std::optional<point> pct_point(const report_cell &cell, std::int64_t r) {
  const auto pc = finite(cell.pct_ceiling);
  if (!pc)
    return std::nullopt;
  const auto g = finite(cell.gbps);
  return point{r,
               *pc,
               {},
               {},
               has_flag(cell, "unstable"),
               point_title(cell, fmt::format("{} of ceiling, {}", pct_text(*pc),
                                             g ? gbps_text(*g) : std::string("—")))};
}

std::optional<point> speedup_point(const view &v, const report_cell &cell, const std::string &pass,
                                   std::int64_t r, std::int64_t cols) {
  const report_cell *base = find_cell(v, v.arms.front(), pass, r, cols);
  if (base == nullptr || is_excluded(v, *base) || !finite(base->median_ms) ||
      !finite(cell.median_ms) || !(cell.median_ms > 0.0))
    return std::nullopt;
  const double m = cell.median_ms;
  const double ratio = base->median_ms / m;
  const std::optional<double> best = best_median(v, pass, r, cols);
  const bool fastest = best && m == *best;
  return point{r,
               ratio,
               {},
               {},
               has_flag(cell, "unstable"),
               point_title(cell, fmt::format("{:.2f}x the baseline's speed{}", ratio,
                                             fastest ? " · fastest here" : "")),
               fastest};
}

std::optional<point> peak_point(const report_cell &cell, std::int64_t r) {
  if (!finite(cell.median_ms))
    return std::nullopt;
  const double b = static_cast<double>(cell.peak_bytes);
  return point{r,
               b / 1e6,
               {},
               {},
               has_flag(cell, "unstable"),
               point_title(cell, fmt::format("peak {} MB", mb_text(b)))};
}

std::optional<point> chart_point(const view &v, const chart &c, const report_cell &cell,
                                 std::int64_t r) {
  if (c.kind == "time")
    return time_point(cell, r);
  if (c.kind == "pct")
    return pct_point(cell, r);
  if (c.kind == "speedup")
    return speedup_point(v, cell, c.pass, r, c.cols);
  return peak_point(cell, r);
}

// Peak memory has no log axis for zeros: all zero gives a linear axis that shows them at 0;
// renderer 2 leaves single zeros out and says so in the legend, not drawn at the floor.
void fit_peak_axis(chart &c, const view &v, bool any_positive) {
  if (!any_positive) {
    c.log_y = false;
    c.y_label = "peak MB";
    return;
  }
  if (v.renderer < 2)
    return;
  for (auto &line : c.lines) {
    std::size_t zeros = 0;
    for (auto &pt : line.points)
      if (pt && pt->y <= 0.0) {
        pt.reset();
        ++zeros;
      }
    if (zeros > 0)
      line.note =
          fmt::format(" (0 MB at {} shape{}, not on the log axis)", zeros, zeros == 1 ? "" : "s");
  }
}

} // namespace

chart make_chart(const view &v, const std::string &pass, std::int64_t cols,
                 const std::string &kind) {
  chart c = chart_frame(v, pass, cols, kind);
  bool any_positive = false;
  for (const auto &arm : v.arms) {
    series s{arm, {}, {}};
    // Renderer 3: memory nobody measured is not drawn as 0; the legend says so.
    const bool unmeasured = kind == "peak" && shows_memory_unmeasured(v, arm);
    if (unmeasured)
      s.note = " (peak memory not measured)";
    std::size_t excluded = 0;
    for (const auto r : v.rows) {
      const report_cell *cell = find_cell(v, arm, pass, r, cols);
      std::optional<point> p;
      if (cell != nullptr && kind != "peak" && is_excluded(v, *cell)) {
        ++excluded; // renderer 4: an excluded cell (or the baseline's, for speedups) is no point
        cell = nullptr;
      }
      if (cell != nullptr && !unmeasured)
        p = chart_point(v, c, *cell, r);
      if (kind == "peak" && p && static_cast<double>(cell->peak_bytes) > 0.0)
        any_positive = true;
      s.points.push_back(p);
    }
    if (excluded > 0)
      s.note += fmt::format(" (excluded from verdicts at {} shape{}: not drawn)", excluded,
                            excluded == 1 ? "" : "s");
    c.lines.push_back(std::move(s));
  }
  if (kind == "peak")
    fit_peak_axis(c, v, any_positive);
  return c;
}

} // namespace prereg::render
