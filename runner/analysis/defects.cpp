// Defect detection: one detector per contract code, run in the contract's order; thresholds are
// in cell_stats.hpp.
#include "analysis/defects.hpp"

#include "prereg/error.hpp"
#include "spec/device_state.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

namespace prereg {
namespace {

/// What a detector reads: the whole run and, for a cell's detector, one cell.
struct run_view {
  const protocol &proto;
  const raw_run &run;
  std::span<const cell_statistics> stats;
  const arm_lookup &registry;
};

struct cell_view {
  const protocol &proto;
  const instrument_record &ins;
  const cell_record &cell;
  const cell_statistics &s;
  const std::string &where; ///< cell_label(cell.key)
  const arm_lookup &registry;
};

using defects = std::vector<report_defect>;
/// A run-level detector: appends its code's defects.
using run_detector = void (*)(std::string_view code, const run_view &in, defects &out);
/// A cell-level detector: the cell's defect of its code, if any.
using cell_detector = std::optional<report_defect> (*)(std::string_view code, const cell_view &c);

report_defect cell_defect(std::string_view code, const cell_key &k, std::string message,
                          json evidence) {
  return {std::string(code), k, std::move(message), std::move(evidence)};
}

report_defect run_defect(std::string_view code, std::string message, json evidence) {
  return {std::string(code), std::nullopt, std::move(message), std::move(evidence)};
}

bool has_flag(const cell_statistics &s, std::string_view flag) {
  return std::find(s.flags.begin(), s.flags.end(), flag) != s.flags.end();
}

// ---- run-level detectors -----------------------------------------------------------------------

void device_contention(std::string_view code, const run_view &in, defects &out) {
  const auto it = in.run.environment.find("other_processes");
  if (it != in.run.environment.end() && it->is_array() && !it->empty())
    out.push_back(run_defect(
        code, fmt::format("{} other process(es) used the device during the run", it->size()),
        {{"other_processes", *it}}));
}

void flush_too_small(std::string_view code, const run_view &in, defects &out) {
  const instrument_record &ins = in.run.instrument;
  if (in.proto.measurement.l2_flush && ins.llc_bytes > 0 &&
      static_cast<double>(ins.flush_bytes) <
          thresholds::flush_llc_factor * static_cast<double>(ins.llc_bytes))
    out.push_back(run_defect(
        code,
        fmt::format("the cache flush reads {} bytes, less than 2 x the {}-byte last-level cache",
                    ins.flush_bytes, ins.llc_bytes),
        {{"flush_bytes", ins.flush_bytes}, {"llc_bytes", ins.llc_bytes}}));
}

void kernel_records_dropped(std::string_view code, const run_view &in, defects &out) {
  const instrument_record &ins = in.run.instrument;
  if (!ins.kernel_clock.empty() && ins.kernel_records_dropped > 0)
    out.push_back(run_defect(
        code,
        fmt::format("the kernel clock dropped {} activity records: kernel times may be short",
                    ins.kernel_records_dropped),
        {{"kernel_records_dropped", ins.kernel_records_dropped}}));
}

void correctness_failure(std::string_view code, const run_view &in, defects &out) {
  for (const auto &c : in.run.correctness) {
    if (c.passed)
      continue;
    std::string message = fmt::format(
        "{} is outside tolerance (max abs error {:g}, max rel error {:g}{})", cell_label(c.key),
        c.max_abs_error, c.max_rel_error, c.unwritten ? ", some output unwritten" : "");
    if (!c.detail.empty())
      message += ": " + c.detail;
    out.push_back(cell_defect(code, c.key, std::move(message),
                              {{"max_abs_error", finite_or_null(c.max_abs_error)},
                               {"max_rel_error", finite_or_null(c.max_rel_error)},
                               {"rtol", in.proto.correctness.rtol},
                               {"atol", in.proto.correctness.atol},
                               {"unwritten", c.unwritten}}));
  }
}

// ---- cell-level detectors (cell order) ---------------------------------------------------------

std::optional<report_defect> above_ceiling(std::string_view code, const cell_view &c) {
  if (!has_flag(c.s, "above-ceiling"))
    return std::nullopt;
  if (c.s.roofline && std::isfinite(c.s.roofline->pct_roof)) // schema 8: against the mix's roof
    return cell_defect(code, c.cell.key,
                       fmt::format("{} reads {:.1f}% of its {:g} GB/s roof for {} bytes read and "
                                   "{} written ({:.1f}% of the measured {:g} GB/s copy ceiling)",
                                   c.where, c.s.roofline->pct_roof, c.s.roofline->roof_gbps,
                                   c.s.roofline->read_bytes_per_step,
                                   c.s.roofline->write_bytes_per_step, c.s.pct_ceiling,
                                   c.ins.ceiling_gbps),
                       {{"pct_ceiling", c.s.pct_ceiling},
                        {"gbps", c.s.gbps},
                        {"ceiling_gbps", c.ins.ceiling_gbps},
                        {"statistic_ms", c.s.statistic_ms},
                        {"bytes_per_step", c.s.bytes_per_step},
                        {"roof_gbps", c.s.roofline->roof_gbps},
                        {"pct_roof", c.s.roofline->pct_roof},
                        {"read_bytes_per_step", c.s.roofline->read_bytes_per_step},
                        {"write_bytes_per_step", c.s.roofline->write_bytes_per_step}});
  return cell_defect(code, c.cell.key,
                     fmt::format("{} reads {:.1f}% of the measured {:g} GB/s ceiling", c.where,
                                 c.s.pct_ceiling, c.ins.ceiling_gbps),
                     {{"pct_ceiling", c.s.pct_ceiling},
                      {"gbps", c.s.gbps},
                      {"ceiling_gbps", c.ins.ceiling_gbps},
                      {"statistic_ms", c.s.statistic_ms},
                      {"bytes_per_step", c.s.bytes_per_step}});
}

std::optional<report_defect> unstable_cell(std::string_view code, const cell_view &c) {
  if (!c.s.unstable)
    return std::nullopt;
  const double ratio = c.s.median_ms > 0.0 ? c.s.iqr_ms / c.s.median_ms : c.s.iqr_ms;
  return cell_defect(code, c.cell.key,
                     fmt::format("{} has IQR/median {:g} above {:g}", c.where, ratio,
                                 c.proto.analysis.unstable_iqr_ratio),
                     {{"iqr_ms", c.s.iqr_ms},
                      {"median_ms", c.s.median_ms},
                      {"ratio", ratio},
                      {"unstable_iqr_ratio", c.proto.analysis.unstable_iqr_ratio}});
}

std::optional<report_defect> harness_allocation(std::string_view code, const cell_view &c) {
  if (c.cell.harness_bytes_in_window == 0)
    return std::nullopt;
  return cell_defect(code, c.cell.key,
                     fmt::format("the harness allocated {} bytes inside a timed window of {}",
                                 c.cell.harness_bytes_in_window, c.where),
                     {{"harness_bytes_in_window", c.cell.harness_bytes_in_window}});
}

std::optional<report_defect> zero_peak_memory(std::string_view code, const cell_view &c) {
  if (c.cell.peak_bytes != 0 || c.s.n == 0)
    return std::nullopt;
  const arm_spec *spec = find_arm_spec(c.proto, c.cell.key.arm);
  const arm_info *info = spec != nullptr && c.registry ? c.registry(*spec) : nullptr;
  if (info == nullptr)
    return std::nullopt;
  const bool must = c.cell.key.pass == pass_kind::fwd
                        ? info->allocates_fwd
                        : (info->allocates_fwd || info->allocates_bwd);
  if (!must)
    return std::nullopt;
  return cell_defect(code, c.cell.key,
                     fmt::format("{} reports 0 peak bytes but kernel {} allocates in {}", c.where,
                                 info->name, to_string(c.cell.key.pass)),
                     {{"peak_bytes", 0},
                      {"kernel", info->name},
                      {"allocates_fwd", info->allocates_fwd},
                      {"allocates_bwd", info->allocates_bwd}});
}

std::optional<report_defect> timer_resolution(std::string_view code, const cell_view &c) {
  if (!has_flag(c.s, "timer-resolution"))
    return std::nullopt;
  return cell_defect(
      code, c.cell.key,
      fmt::format("{} median {:g} ms is under 20 x the timer resolution {:g} ms", c.where,
                  c.s.median_ms, c.ins.timer_resolution_ms),
      {{"median_ms", c.s.median_ms},
       {"timer_resolution_ms", c.ins.timer_resolution_ms},
       {"threshold_ms", thresholds::timer_resolution_factor * c.ins.timer_resolution_ms}});
}

std::optional<report_defect> clock_throttle(std::string_view code, const cell_view &c) {
  if (!has_flag(c.s, "clock-throttle"))
    return std::nullopt;
  return cell_defect(code, c.cell.key,
                     fmt::format("SM clock {:g} MHz after {} is below 90% of {:g} MHz at the start",
                                 c.cell.clock_mhz, c.where, c.ins.clock_start_mhz),
                     {{"clock_mhz", c.cell.clock_mhz}, {"clock_start_mhz", c.ins.clock_start_mhz}});
}

std::optional<report_defect> drift(std::string_view code, const cell_view &c) {
  if (!has_flag(c.s, "drift"))
    return std::nullopt;
  return cell_defect(code, c.cell.key,
                     fmt::format("{} samples trend with repetition index "
                                 "(Spearman rho {:.3f}, n = {})",
                                 c.where, c.s.spearman_rho, c.s.n),
                     {{"spearman_rho", c.s.spearman_rho}, {"n", c.s.n}});
}

std::optional<report_defect> input_mutated(std::string_view code, const cell_view &c) {
  if (!c.cell.input_mutated)
    return std::nullopt;
  return cell_defect(
      code, c.cell.key,
      fmt::format("{} changed an input inside a timed call: {}", c.where, *c.cell.input_mutated),
      {{"detail", *c.cell.input_mutated}});
}

std::optional<report_defect> off_window_work(std::string_view code, const cell_view &c) {
  const double off = c.cell.off_window_ms;
  if (!has_off_window_work(off, c.s.n, c.s.median_ms))
    return std::nullopt;
  return cell_defect(
      code, c.cell.key,
      fmt::format("{} left {:g} ms of device work pending after a timed window (median "
                  "{:g} ms)",
                  c.where, off, c.s.median_ms),
      {{"off_window_ms", off},
       {"median_ms", c.s.median_ms},
       {"threshold_ms",
        std::max(thresholds::off_window_min_ms, thresholds::off_window_ratio * c.s.median_ms)}});
}

// The kernels' union inside the window cannot exceed the window: more means work that ran
// outside it (another stream's kernel overlapping the window's edges) or a clock that
// disagrees with the events beyond their resolution.
std::optional<report_defect> kernel_above_step(std::string_view code, const cell_view &c) {
  const cell_record &cell = c.cell;
  std::int64_t count = 0;
  double worst = 0;
  for (std::size_t k = 0; k < cell.kernel_ms.size(); ++k) {
    const double excess = cell.kernel_ms[k] - cell.samples_ms[k];
    if (excess > c.ins.timer_resolution_ms) {
      ++count;
      worst = std::max(worst, excess);
    }
  }
  if (count == 0)
    return std::nullopt;
  return cell_defect(
      code, cell.key,
      fmt::format("{}: in {} of {} samples the kernels took longer than the step (by "
                  "up to {:g} ms; timer resolution {:g} ms)",
                  c.where, count, cell.kernel_ms.size(), worst, c.ins.timer_resolution_ms),
      {{"samples", count},
       {"worst_excess_ms", worst},
       {"timer_resolution_ms", c.ins.timer_resolution_ms}});
}

std::optional<report_defect> no_arm_kernel(std::string_view code, const cell_view &c) {
  const auto &counts = c.cell.kernel_counts;
  const auto count =
      static_cast<std::int64_t>(std::count(counts.begin(), counts.end(), std::int64_t{0}));
  if (count == 0)
    return std::nullopt;
  return cell_defect(code, c.cell.key,
                     fmt::format("{}: {} of {} timed steps ran no kernel on the device (the work "
                                 "was done elsewhere, or not at all)",
                                 c.where, count, counts.size()),
                     {{"samples", count}});
}

// CUPTI's records of graph kernel nodes cost the events time per node (measured on the H200:
// about 2.3 us per node, docs/evidence/kernel-clock-h200.md), so a step replaying a graph is
// slower with the clock on than without it.
std::optional<report_defect> graph_under_kernel_clock(std::string_view code, const cell_view &c) {
  const auto &graph = c.cell.graph_kernel_counts;
  if (graph.empty())
    return std::nullopt;
  const std::int64_t most = *std::max_element(graph.begin(), graph.end());
  const auto with = static_cast<std::int64_t>(
      std::count_if(graph.begin(), graph.end(), [](std::int64_t v) { return v > 0; }));
  if (most <= 0)
    return std::nullopt;
  return cell_defect(code, c.cell.key,
                     fmt::format("{}: in {} of {} samples up to {} kernels ran as CUDA graph nodes "
                                 "while the kernel clock was on; its records of graph nodes cost "
                                 "the events time per node, so this cell's step times are "
                                 "inflated (time it again with the clock off: "
                                 "measurement.kernel_clock: false, or PREREG_KERNEL_CLOCK=off)",
                                 c.where, with, graph.size(), most),
                     {{"samples", with}, {"max_graph_kernels", most}});
}

// The device's own account (NVML's clocks-event reasons, read after each sample's window) that
// power or heat held its clocks down: those samples were not taken at the clocks the others were.
std::optional<report_defect> throttled(std::string_view code, const cell_view &c) {
  json samples = json::array();
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < c.cell.states.size(); ++i) {
    const auto &r = c.cell.states[i].reasons;
    if (r && (*r & throttle_reason_mask) != 0) {
      samples.push_back(i);
      seen |= *r & throttle_reason_mask;
    }
  }
  if (samples.empty())
    return std::nullopt;
  std::string list;
  for (std::size_t k = 0; k < samples.size() && k < 8; ++k) {
    if (k > 0)
      list += ", ";
    list += std::to_string(samples[k].get<std::size_t>());
  }
  if (samples.size() > 8)
    list += ", ...";
  return cell_defect(
      code, c.cell.key,
      fmt::format("{}: the device throttled ({}) in {} of {} samples (samples {})", c.where,
                  throttle_reason_names(seen), samples.size(), c.cell.states.size(), list),
      {{"samples", samples}, {"reasons", throttle_reason_names(seen)}, {"reason_bits", seen}});
}

/// "3, 5, 9" or "0, 1, 2, 3, 4, 5, 6, 7, ...": the first 8 indices.
std::string index_list(const std::vector<std::size_t> &indices) {
  std::string list;
  for (std::size_t k = 0; k < indices.size() && k < 8; ++k)
    list += (k > 0 ? ", " : "") + std::to_string(indices[k]);
  if (indices.size() > 8)
    list += ", ...";
  return list;
}

// The measuring process was stopped (SIGSTOP, SIGTSTP: a job-control stop that a SIGCONT ended)
// inside a sample's window: that sample's time holds the stop (docs/engine.md).
std::optional<report_defect> measuring_process_stopped(std::string_view code, const cell_view &c) {
  const auto stopped = stopped_samples(c.cell.sched);
  if (stopped.empty())
    return std::nullopt;
  std::int64_t stops = 0;
  for (const auto &s : c.cell.sched)
    stops += s.stops;
  return cell_defect(code, c.cell.key,
                     fmt::format("{}: the measuring process was stopped and continued during {} "
                                 "of {} samples (samples {}): their times hold the stop",
                                 c.where, stopped.size(), c.cell.sched.size(), index_list(stopped)),
                     {{"samples", stopped}, {"stops", stops}});
}

// The measuring thread waited for a CPU for most of most windows: the host was oversubscribed
// (or something starved this process), and the times include the wait.
std::optional<report_defect> measuring_process_descheduled(std::string_view code,
                                                           const cell_view &c) {
  const auto waited = descheduled_samples(c.cell.sched);
  if (waited.empty() || waited.size() * 2 <= c.cell.sched.size())
    return std::nullopt;
  double worst = 0;
  for (const std::size_t i : waited)
    worst = std::max(worst, c.cell.sched[i].run_delay_ms);
  return cell_defect(code, c.cell.key,
                     fmt::format("{}: in {} of {} samples the measuring thread waited for a CPU "
                                 "for at least half of the window (up to {:g} ms): those times "
                                 "include the wait",
                                 c.where, waited.size(), c.cell.sched.size(), worst),
                     {{"samples", waited.size()}, {"worst_run_delay_ms", worst}});
}

// ---- the table, in the contract's order --------------------------------------------------------

struct detector {
  std::string_view code;
  run_detector run = nullptr;   ///< a run-level code
  cell_detector cell = nullptr; ///< a cell-level code, applied to each cell in order
};

constexpr std::array<detector, 19> detectors{{
    {"above-ceiling", nullptr, above_ceiling},
    {"unstable-cell", nullptr, unstable_cell},
    {"harness-allocation", nullptr, harness_allocation},
    {"zero-peak-memory", nullptr, zero_peak_memory},
    {"timer-resolution", nullptr, timer_resolution},
    {"clock-throttle", nullptr, clock_throttle},
    {"device-contention", device_contention, nullptr},
    {"drift", nullptr, drift},
    {"flush-too-small", flush_too_small, nullptr},
    {"correctness-failure", correctness_failure, nullptr},
    {"input-mutated", nullptr, input_mutated},
    {"off-window-work", nullptr, off_window_work},
    {"kernel-records-dropped", kernel_records_dropped, nullptr},
    {"kernel-above-step", nullptr, kernel_above_step},
    {"no-arm-kernel", nullptr, no_arm_kernel},
    {"graph-under-kernel-clock", nullptr, graph_under_kernel_clock},
    {"throttled", nullptr, throttled},
    {"measuring-process-stopped", nullptr, measuring_process_stopped},
    {"measuring-process-descheduled", nullptr, measuring_process_descheduled},
}};

constexpr std::array<std::string_view, detectors.size()> codes = [] {
  std::array<std::string_view, detectors.size()> out{};
  for (std::size_t i = 0; i < detectors.size(); ++i)
    out[i] = detectors[i].code;
  return out;
}();

/// The defects of one code, in order.
void detect(const detector &d, const run_view &in, defects &out) {
  if (d.run != nullptr) {
    d.run(d.code, in, out);
    return;
  }
  for (std::size_t i = 0; i < in.run.cells.size(); ++i) {
    const cell_record &cell = in.run.cells[i];
    const std::string where = cell_label(cell.key);
    const cell_view c{in.proto, in.run.instrument, cell, in.stats[i], where, in.registry};
    if (auto defect = d.cell(d.code, c))
      out.push_back(std::move(*defect));
  }
}

} // namespace

std::span<const std::string_view> defect_codes() { return codes; }

bool derivable_from_raw(std::string_view code) {
  return code == "above-ceiling" || code == "unstable-cell" || code == "timer-resolution" ||
         code == "drift";
}

std::vector<report_defect> detect_defects(const protocol &proto, const raw_run &run,
                                          std::span<const cell_statistics> stats,
                                          const arm_lookup &registry) {
  if (stats.size() != run.cells.size()) {
    throw io_error(fmt::format("{} cell statistics for {} cells", stats.size(), run.cells.size()));
  }
  for (std::size_t i = 0; i < stats.size(); ++i) {
    if (!(stats[i].key == run.cells[i].key)) {
      throw io_error(
          fmt::format("cell statistics {} do not match cell {}", i, cell_label(run.cells[i].key)));
    }
  }
  const run_view in{proto, run, stats, registry};
  std::vector<report_defect> out;
  for (const detector &d : detectors)
    detect(d, in, out);
  return out;
}

std::vector<report_defect> detect_defects(const protocol &proto, const raw_run &run,
                                          std::span<const cell_statistics> stats) {
  return detect_defects(proto, run, stats,
                        [&](const arm_spec &arm) { return find_arm(proto.device, arm.kernel); });
}

} // namespace prereg
