// The `expect` expression language of predictions (docs/protocol.md): parse at freeze
// time, evaluate per cell and per bootstrap resample.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// A per-arm quantity an expression can read. An arm id alone means `time`. The kernel clock's
/// kernel_time, gap_share and kernels, a region's share and a region's kernel_share, and the
/// roofs' tflops, pct_compute and pct_roof need prereg: 2 (docs/protocol.md).
enum class metric {
  time,
  peak_mb,
  gbps,
  pct_ceiling,
  kernel_time,
  gap_share,
  kernels,
  share,
  kernel_share,
  tflops,
  pct_compute,
  pct_roof
};
/// True for the metrics only the kernel clock can supply.
[[nodiscard]] bool is_kernel_metric(metric m);
/// True for the metrics that read the roofs (tflops, pct_compute, pct_roof).
[[nodiscard]] bool is_roof_metric(metric m);
[[nodiscard]] std::string_view to_string(metric m);

/// The words of the language: `and`, `abs` and the metric functions `time`, `peak_mb`, `gbps`,
/// `pct_ceiling`, `kernel_time`, `gap_share`, `kernels`, `share`, `kernel_share`, `tflops`,
/// `pct_compute`, `pct_roof`. An arm id may not be one of them.
[[nodiscard]] std::span<const std::string_view> expression_keywords();
[[nodiscard]] bool is_expression_keyword(std::string_view word);

/// One (metric, arm) pair an expression reads; `share` and `kernel_share` also name a region.
struct metric_ref {
  metric what;
  std::string arm;
  std::string label; ///< share / kernel_share(arm, "label"): the region; else empty
  friend bool operator==(const metric_ref &, const metric_ref &) = default;
};

/// Other names an author may write for an arm, each with the arm's id: the kernel or the
/// function it runs. A message about such a name (it is not an arm id) suggests the arm.
using arm_aliases = std::vector<std::pair<std::string, std::string>>;

/// A parsed `expect`: one or more comparisons joined by `and`.
class expectation {
public:
  /// Parses `text`; identifiers must be in `arm_ids`. Any error (unknown identifier or
  /// function, division by a literal zero, trailing tokens, bad syntax, nesting deeper than
  /// 64) throws `error` (exit 2) at `where` with the character offset in the message; a
  /// word where an arm id belongs lists `arm_ids`, with the nearest one or the arm that an
  /// alias names as "did you mean".
  [[nodiscard]] static expectation parse(std::string_view text,
                                         const std::vector<std::string> &arm_ids,
                                         const std::string &where, const arm_aliases &aliases = {});

  /// Evaluates every comparison; true only if all hold. `value` supplies each reference.
  [[nodiscard]] bool holds(const std::function<double(const metric_ref &)> &value) const;
  /// Every (metric, arm) the expression reads, without duplicates, in first-use order.
  [[nodiscard]] const std::vector<metric_ref> &references() const noexcept { return m_refs; }
  /// The distinct arms the expression involves, in first-use order.
  [[nodiscard]] std::vector<std::string> arms() const;
  /// The outcome if it is the same for `trials` seeded random positive values of every
  /// reference (log-uniform over 1e-6..1e6; a `kernels` count: a whole number 1..999): such
  /// an expectation never depends on the data
  /// (e.g. `a <= b / (b - b)` never holds, `a <= 1e308 * 1e308` always does). Else nullopt.
  [[nodiscard]] std::optional<bool> constant_outcome(std::size_t trials = 4096) const;

  struct node {
    enum class kind { number, ref, neg, abs, add, sub, mul, div } k;
    double number = 0; ///< for kind::number
    int ref = -1;      ///< index into references() for kind::ref
    int lhs = -1;      ///< child node index (neg/abs use lhs)
    int rhs = -1;
  };
  struct comparison {
    enum class op { lt, le, gt, ge } o;
    int lhs;
    int rhs;
  };

private:
  std::vector<node> m_nodes;
  std::vector<comparison> m_comparisons;
  std::vector<metric_ref> m_refs;
  [[nodiscard]] double eval(int index, const std::vector<double> &refs) const;
  friend class expression_parser;
};

} // namespace prereg
