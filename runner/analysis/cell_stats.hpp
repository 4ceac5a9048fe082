// Per-cell statistics of a run: the report's cells[] numbers, `bound` and `flags`, derived
// only from a cell's raw record, the protocol and the instrument (docs/analysis.md).
#pragma once

#include "base/json.hpp"
#include "model/report_model.hpp"
#include "spec/protocol.hpp"
#include "spec/records.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// Thresholds of `bound`, `flags` and the cell-level defects; fixed, part of the contract.
namespace thresholds {
inline constexpr double launch_bound_factor = 2.0;  ///< launch if median < 2 x floor x repeat
inline constexpr double bandwidth_bound_pct = 60.0; ///< bandwidth if pct_ceiling >= 60
                                                    ///< (with roofs: pct_roof; compute
                                                    ///< likewise if pct_compute >= 60)
inline constexpr double above_ceiling_pct = 100.0;  ///< above-ceiling if pct_ceiling (with roofs:
                                                    ///< pct_roof) > 100
inline constexpr double timer_resolution_factor = 20.0; ///< median < 20 x timer resolution
inline constexpr double drift_abs_rho = 0.5;            ///< drift if |Spearman rho| > 0.5 ...
inline constexpr std::size_t drift_min_samples = 10;    ///< ... and at least 10 samples
inline constexpr double clock_throttle_ratio = 0.9;     ///< clock < 0.9 x clock at start
inline constexpr double flush_llc_factor = 2.0;         ///< flush buffer >= 2 x last-level cache
inline constexpr double off_window_min_ms = 0.05;    ///< off-window-work if pending work > 0.05 ms
inline constexpr double off_window_ratio = 0.1;      ///< ... and > 0.1 x the cell's median
inline constexpr double launch_gap_share_pct = 50.0; ///< with a kernel clock: launch if the
                                                     ///< median gap share >= 50%
/// Analysis 2: a cell above this % of the measured copy ceiling cannot decide a verdict (the
/// H200's 4.8 TB/s HBM3e peak is 112% of its measured 4281 GB/s copy ceiling; docs/analysis.md).
inline constexpr double excluded_above_ceiling_pct_v2 = 115.0;
/// Analysis 3: the same margin times the most a fwd+bwd bytes model can over-count a fused
/// kernel's traffic (an input the forward and the backward both read counted twice: 8/6 for
/// SwiGLU), 1.12 x 4/3, rounded up: 150%.
inline constexpr double excluded_above_ceiling_pct = 150.0;
/// measuring-process-descheduled: a sample whose measuring thread was runnable but not running
/// for at least half of its window and at least 1 ms; raised when more than half of the
/// cell's samples are such.
inline constexpr double descheduled_share = 0.5;
inline constexpr double descheduled_min_ms = 1.0;
/// The margin over the copy ceiling beyond which a cell cannot decide, by analysis version.
[[nodiscard]] constexpr double excluded_above_ceiling_pct_for(int analysis) {
  return analysis >= 3 ? excluded_above_ceiling_pct : excluded_above_ceiling_pct_v2;
}
} // namespace thresholds

/// The kernel clock's derived numbers of one cell (docs/analysis.md).
struct kernel_statistics {
  std::vector<double> gap_ms; ///< per sample: step minus kernel time
  double median_kernel_ms = 0;
  double q1_kernel_ms = 0;
  double q3_kernel_ms = 0;
  double statistic_kernel_ms = 0; ///< the protocol's statistic of kernel_ms
  double median_gap_ms = 0;
  double gap_share_pct = 0; ///< median over samples of 100 x gap / step (0 where step is 0)
  double median_kernels = 0;
  std::vector<double> name_median_ms; ///< per kernel name, as the record's kernel_names
  std::vector<double> name_share_pct; ///< 100 x the name's summed time / summed step time
};

/// 100 x (step - kernel) / step, 0 for a zero step: one sample's gap share.
[[nodiscard]] double gap_share_pct(double step_ms, double kernel_ms);

/// The derived numbers of one cell. Times are NaN when the cell has no samples.
struct cell_statistics {
  cell_key key;
  std::size_t n = 0; ///< number of samples
  double median_ms = 0;
  double q1_ms = 0;
  double q3_ms = 0;
  double iqr_ms = 0;
  double mean_ms = 0;
  double min_ms = 0;
  double statistic_ms = 0; ///< the protocol's statistic (median, mean or min)
  double spearman_rho = 0; ///< samples vs repetition index
  std::uint64_t peak_bytes = 0;
  std::uint64_t bytes_per_step = 0; ///< bytes model x the arm's repeat
  double gbps = 0;                  ///< bytes_per_step at statistic_ms [GB/s]
  double pct_ceiling = 0;           ///< 100 x gbps / ceiling_gbps [%]
  bool unstable = false;
  bound_kind bound = bound_kind::neither;
  std::vector<std::string> flags;          ///< in the documented order
  std::optional<kernel_statistics> kernel; ///< the cell has kernel-clock facts
  std::vector<region_share> region_shares; ///< one per label of cell.regions_ms, in label order
  /// Against the roofs, where the instrument has them (schema_version 8; roofline.hpp).
  std::optional<report_roofline> roofline;
};

/// 100 x sum(region[i]) / sum(samples[i]) over the indices `pick` (every sample when empty)
/// [%]; NaN when the step's sum is not positive.
[[nodiscard]] double region_share_pct(std::span<const double> samples,
                                      std::span<const double> region,
                                      std::span<const std::size_t> pick = {});

/// The share of each region of `cell` with its interval: `resamples` percentile-bootstrap
/// resamples of the sample indices (seeded from the cell key and label), at `confidence`.
/// Throws `error` (exit 2) when a region's list is not as long as samples_ms or holds a
/// negative or non-finite time.
[[nodiscard]] std::vector<region_share>
compute_region_shares(const cell_record &cell, std::int64_t resamples, double confidence);

/// True if a cell with this IQR and median is unstable: iqr/median > ratio when median > 0;
/// when median <= 0, iqr > 0. False for NaN (no samples).
[[nodiscard]] bool is_unstable(double iqr_ms, double median_ms, double ratio);

/// True if a cell with these off-window work, sample count and median shows off-window work:
/// known, n >= 1, > off_window_min_ms and > off_window_ratio x median (the defect's rule).
[[nodiscard]] bool has_off_window_work(double off_window_ms, std::size_t n, double median_ms);

/// The indices of the samples of `sched` during which the measuring process was stopped and
/// continued (stops > 0): the measuring-process-stopped defect's rule.
[[nodiscard]] std::vector<std::size_t> stopped_samples(std::span<const sched_sample> sched);
/// The indices of the samples of `sched` whose measuring thread waited for a CPU for at least
/// descheduled_share of the window and descheduled_min_ms (the run delay known).
[[nodiscard]] std::vector<std::size_t> descheduled_samples(std::span<const sched_sample> sched);

/// The `correctness_record` of `key`, or null.
[[nodiscard]] const correctness_record *find_correctness(std::span<const correctness_record> all,
                                                         const cell_key &key);

/// The statistics of one cell. Throws `error` (exit 2) if the cell's arm is not in `proto`
/// or a sample is not finite.
[[nodiscard]] cell_statistics compute_cell_statistics(const cell_record &cell,
                                                      const protocol &proto,
                                                      const instrument_record &instrument,
                                                      std::span<const correctness_record> checks);

/// The statistics of every cell of `run`, in the order of `run.cells`.
[[nodiscard]] std::vector<cell_statistics> compute_cell_statistics(const protocol &proto,
                                                                   const raw_run &run);

} // namespace prereg
