// The charts of report.html as data: per arm a series of points over rows, made from the view.
#pragma once

#include "report/render/view.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace prereg::render {

/// One plotted value of one arm at one rows.
struct point {
  std::int64_t x = 0;
  double y = 0;                 ///< the plotted value (<= 0 on a log axis: pinned to the floor)
  std::optional<double> lo, hi; ///< whisker ends
  bool hollow = false;
  std::string title;
  bool winner = false; ///< renderer 2's speedup chart: the fastest arm at this x (ringed)
};

/// One arm's line.
struct series {
  std::string arm;
  std::vector<std::optional<point>> points; ///< one per chart x value; nullopt is a gap
  /// Legend text after the arm (renderer 2: zeros a log axis cannot show; renderer 3: memory
  /// not measured).
  std::string note;
};

/// One chart: rows on a log x axis (over named axes: the shapes, evenly spaced), one kind of
/// value on y, one series per arm.
struct chart {
  std::string kind; ///< time | pct | peak | speedup
  std::string title;
  std::string y_label;
  bool log_y = true;
  std::string pass;
  std::int64_t cols = 0;
  std::vector<std::int64_t> xs;
  /// Over named axes: one label per x (xs are then 0, 1, ...: an evenly spaced axis of shapes,
  /// not a log axis of rows) and the axis' title; empty for rows x cols.
  std::vector<std::string> x_names;
  std::string x_title;
  std::optional<std::int64_t> op_x;
  std::optional<double> reference_y; ///< a dashed line (100% of the ceiling)
  std::string reference_label;
  std::string (*tick_text)(double) = nullptr;
  std::vector<series> lines;
};

/// The chart of `kind` (time, pct, peak or speedup) at one pass and cols.
[[nodiscard]] chart make_chart(const view &v, const std::string &pass, std::int64_t cols,
                               const std::string &kind);

} // namespace prereg::render
