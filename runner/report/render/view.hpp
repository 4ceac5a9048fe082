// The report as the renderers see it: dimensions in protocol order, cells by key.
#pragma once

#include "base/json.hpp"
#include "model/report_model.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace prereg::render {

/// A cell's key as the view finds it: arm, pass name, rows, cols. Over named axes, "rows" is the
/// index of the cell's leading extents in view::leading and "cols" the last axis' extent.
using cell_id = std::tuple<std::string, std::string, std::int64_t, std::int64_t>;

/// One report arranged for rendering; borrows the report it is made from.
struct view {
  const report_document *report = nullptr;
  const json *body = nullptr;
  std::vector<std::string> arms;
  std::vector<std::string> passes;
  std::vector<std::int64_t> rows;
  std::vector<std::int64_t> cols;
  std::optional<std::pair<std::int64_t, std::int64_t>> op;
  std::map<cell_id, const report_cell *> cells;
  std::optional<double> unstable_ratio;
  /// Arms whose memory the run did not measure: environment.outside_arms.<id>.memory_billing
  /// begins "not measured" (a Python arm on the CPU); their peak_bytes 0 means nothing.
  std::set<std::string> memory_not_measured;
  /// Renderer 4: the cells excluded from verdicts (analysis 2's rules, docs/analysis.md), with
  /// why in a few words; never "fastest", never plotted, shown as excluded.
  std::map<cell_id, std::string> excluded;
  /// Over named axes (docs/report.md, "Pages of named axes"): the operation's axes in order;
  /// empty for rows x cols. The view's `rows` are then indices into `leading`, each the extents
  /// of every axis but the last (sorted), and its `cols` the last axis' extents; an operation of
  /// one axis has that axis as its leading extents and `cols` {0}.
  std::vector<std::string> axis_names;
  std::vector<std::vector<std::int64_t>> leading;
  int renderer = 1;         ///< the report's tool.renderer: which layout to reproduce
  bool exploratory = false; ///< `prereg try`: never confirmatory
};

/// The view of `report`: arms and passes in protocol order (then any only the cells name),
/// rows and cols sorted.
[[nodiscard]] view make_view(const report_document &report);

/// The cell at (arm, pass, rows, cols), or nullptr where it was not run.
[[nodiscard]] const report_cell *find_cell(const view &v, const std::string &arm,
                                           const std::string &pass, std::int64_t rows,
                                           std::int64_t cols);

/// The smallest finite median of any arm at (pass, rows, cols): the fastest arm's. Renderer 4:
/// of the arms whose cell is neither excluded nor flagged there (none: nullopt).
[[nodiscard]] std::optional<double> best_median(const view &v, const std::string &pass,
                                                std::int64_t rows, std::int64_t cols);

/// Renderer 4: why `cell` is excluded from verdicts, or null.
[[nodiscard]] const std::string *excluded_reason(const view &v, const report_cell &cell);

/// True if the cell carries `flag`.
[[nodiscard]] bool has_flag(const report_cell &cell, std::string_view flag);

/// "rows×cols".
[[nodiscard]] std::string shape_text(std::int64_t rows, std::int64_t cols);

/// Whether the view is over named axes (not rows x cols).
[[nodiscard]] bool is_named(const view &v);

/// A cell key's shape as the pages write it: "rows×cols", or "b=2 n=8 d=64" over named axes.
[[nodiscard]] std::string key_shape_text(const cell_key &k);

/// A shape of the view: "rows×cols", or over named axes "b=2 n=8 d=64".
[[nodiscard]] std::string shape_text(const view &v, std::int64_t rows, std::int64_t cols);

/// A results column (one of the view's rows): "128", or over named axes "b=2 n=8".
[[nodiscard]] std::string row_text(const view &v, std::int64_t rows);

/// A results block (one of the view's cols) joined by `sep`: "cols" sep "1024", or over named
/// axes "d" sep "64" (empty for an operation of one axis).
[[nodiscard]] std::string block_text(const view &v, std::int64_t cols, std::string_view sep);

/// True if (rows, cols) is the protocol's operating point.
[[nodiscard]] bool is_op_column(const view &v, std::int64_t rows, std::int64_t cols);

/// Renderer 3: true if `arm`'s peak memory is shown as "not measured" rather than its 0.
[[nodiscard]] bool shows_memory_unmeasured(const view &v, const std::string &arm);

/// True if any cell has a kernel clock record.
[[nodiscard]] bool has_kernel_clock(const view &v);

/// A results block's heading: "pass, cols = N", with the operating point's rows where it is here.
[[nodiscard]] std::string cols_heading(const view &v, const std::string &pass, std::int64_t cols);

/// Renderer 2's summary block: the operating point's cols, else the first.
[[nodiscard]] std::int64_t summary_cols(const view &v);

/// The banner of an EXPLORATORY report (`prereg try`).
inline constexpr const char *exploratory_text =
    "EXPLORATORY: `prereg try` ran this protocol as a file, unfrozen. It was not "
    "pre-registered, is not signed and is not in any ledger; its verdicts are not "
    "confirmatory and `prereg audit` refuses it.";

} // namespace prereg::render
