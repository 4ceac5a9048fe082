// Defect detection: one rule per contract code; thresholds are in cell_stats.hpp.
#include "analysis/defects.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace prereg {
namespace {

constexpr std::array<std::string_view, 16> codes{
    "above-ceiling",          "unstable-cell",
    "harness-allocation",     "zero-peak-memory",
    "timer-resolution",       "clock-throttle",
    "device-contention",      "drift",
    "flush-too-small",        "correctness-failure",
    "input-mutated",          "off-window-work",
    "kernel-records-dropped", "kernel-above-step",
    "no-arm-kernel",          "graph-under-kernel-clock"};

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

// The defects of one code, in order.
void detect(std::string_view code, const protocol &proto, const raw_run &run,
            std::span<const cell_statistics> stats, const arm_lookup &registry,
            std::vector<report_defect> &out) {
  const instrument_record &ins = run.instrument;
  if (code == "device-contention") {
    const auto it = run.environment.find("other_processes");
    if (it != run.environment.end() && it->is_array() && !it->empty()) {
      out.push_back(run_defect(
          code, fmt::format("{} other process(es) used the device during the run", it->size()),
          {{"other_processes", *it}}));
    }
    return;
  }
  if (code == "flush-too-small") {
    if (proto.measurement.l2_flush && ins.llc_bytes > 0 &&
        static_cast<double>(ins.flush_bytes) <
            thresholds::flush_llc_factor * static_cast<double>(ins.llc_bytes)) {
      out.push_back(run_defect(
          code,
          fmt::format("the cache flush reads {} bytes, less than 2 x the {}-byte last-level cache",
                      ins.flush_bytes, ins.llc_bytes),
          {{"flush_bytes", ins.flush_bytes}, {"llc_bytes", ins.llc_bytes}}));
    }
    return;
  }
  if (code == "kernel-records-dropped") {
    if (!ins.kernel_clock.empty() && ins.kernel_records_dropped > 0)
      out.push_back(run_defect(
          code,
          fmt::format("the kernel clock dropped {} activity records: kernel times may be short",
                      ins.kernel_records_dropped),
          {{"kernel_records_dropped", ins.kernel_records_dropped}}));
    return;
  }
  if (code == "correctness-failure") {
    for (const auto &c : run.correctness) {
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
                                 {"rtol", proto.correctness.rtol},
                                 {"atol", proto.correctness.atol},
                                 {"unwritten", c.unwritten}}));
    }
    return;
  }
  for (std::size_t i = 0; i < run.cells.size(); ++i) {
    const cell_record &cell = run.cells[i];
    const cell_statistics &s = stats[i];
    const std::string where = cell_label(cell.key);
    if (code == "above-ceiling" && has_flag(s, "above-ceiling")) {
      out.push_back(cell_defect(code, cell.key,
                                fmt::format("{} reads {:.1f}% of the measured {:g} GB/s ceiling",
                                            where, s.pct_ceiling, ins.ceiling_gbps),
                                {{"pct_ceiling", s.pct_ceiling},
                                 {"gbps", s.gbps},
                                 {"ceiling_gbps", ins.ceiling_gbps},
                                 {"statistic_ms", s.statistic_ms},
                                 {"bytes_per_step", s.bytes_per_step}}));
    } else if (code == "unstable-cell" && s.unstable) {
      const double ratio = s.median_ms > 0.0 ? s.iqr_ms / s.median_ms : s.iqr_ms;
      out.push_back(cell_defect(code, cell.key,
                                fmt::format("{} has IQR/median {:g} above {:g}", where, ratio,
                                            proto.analysis.unstable_iqr_ratio),
                                {{"iqr_ms", s.iqr_ms},
                                 {"median_ms", s.median_ms},
                                 {"ratio", ratio},
                                 {"unstable_iqr_ratio", proto.analysis.unstable_iqr_ratio}}));
    } else if (code == "harness-allocation" && cell.harness_bytes_in_window > 0) {
      out.push_back(
          cell_defect(code, cell.key,
                      fmt::format("the harness allocated {} bytes inside a timed window of {}",
                                  cell.harness_bytes_in_window, where),
                      {{"harness_bytes_in_window", cell.harness_bytes_in_window}}));
    } else if (code == "zero-peak-memory" && cell.peak_bytes == 0 && s.n > 0) {
      const arm_spec *spec = find_arm_spec(proto, cell.key.arm);
      const arm_info *info = spec != nullptr && registry ? registry(*spec) : nullptr;
      if (info == nullptr)
        continue;
      const bool must = cell.key.pass == pass_kind::fwd
                            ? info->allocates_fwd
                            : (info->allocates_fwd || info->allocates_bwd);
      if (!must)
        continue;
      out.push_back(cell_defect(code, cell.key,
                                fmt::format("{} reports 0 peak bytes but kernel {} allocates in {}",
                                            where, info->name, to_string(cell.key.pass)),
                                {{"peak_bytes", 0},
                                 {"kernel", info->name},
                                 {"allocates_fwd", info->allocates_fwd},
                                 {"allocates_bwd", info->allocates_bwd}}));
    } else if (code == "timer-resolution" && has_flag(s, "timer-resolution")) {
      out.push_back(cell_defect(
          code, cell.key,
          fmt::format("{} median {:g} ms is under 20 x the timer resolution {:g} ms", where,
                      s.median_ms, ins.timer_resolution_ms),
          {{"median_ms", s.median_ms},
           {"timer_resolution_ms", ins.timer_resolution_ms},
           {"threshold_ms", thresholds::timer_resolution_factor * ins.timer_resolution_ms}}));
    } else if (code == "clock-throttle" && has_flag(s, "clock-throttle")) {
      out.push_back(cell_defect(
          code, cell.key,
          fmt::format("SM clock {:g} MHz after {} is below 90% of {:g} MHz at the start",
                      cell.clock_mhz, where, ins.clock_start_mhz),
          {{"clock_mhz", cell.clock_mhz}, {"clock_start_mhz", ins.clock_start_mhz}}));
    } else if (code == "input-mutated" && cell.input_mutated) {
      out.push_back(cell_defect(
          code, cell.key,
          fmt::format("{} changed an input inside a timed call: {}", where, *cell.input_mutated),
          {{"detail", *cell.input_mutated}}));
    } else if (code == "off-window-work" && std::isfinite(cell.off_window_ms) && s.n > 0 &&
               cell.off_window_ms > thresholds::off_window_min_ms &&
               cell.off_window_ms > thresholds::off_window_ratio * s.median_ms) {
      out.push_back(cell_defect(
          code, cell.key,
          fmt::format("{} left {:g} ms of device work pending after a timed window (median "
                      "{:g} ms)",
                      where, cell.off_window_ms, s.median_ms),
          {{"off_window_ms", cell.off_window_ms},
           {"median_ms", s.median_ms},
           {"threshold_ms",
            std::max(thresholds::off_window_min_ms, thresholds::off_window_ratio * s.median_ms)}}));
    } else if (code == "kernel-above-step" && !cell.kernel_ms.empty()) {
      // The kernels' union inside the window cannot exceed the window: more means work that
      // ran outside it (another stream's kernel overlapping the window's edges) or a clock
      // that disagrees with the events beyond their resolution.
      std::int64_t count = 0;
      double worst = 0;
      for (std::size_t k = 0; k < cell.kernel_ms.size(); ++k) {
        const double excess = cell.kernel_ms[k] - cell.samples_ms[k];
        if (excess > ins.timer_resolution_ms) {
          ++count;
          worst = std::max(worst, excess);
        }
      }
      if (count > 0)
        out.push_back(cell_defect(
            code, cell.key,
            fmt::format("{}: in {} of {} samples the kernels took longer than the step (by up "
                        "to {:g} ms; timer resolution {:g} ms)",
                        where, count, cell.kernel_ms.size(), worst, ins.timer_resolution_ms),
            {{"samples", count},
             {"worst_excess_ms", worst},
             {"timer_resolution_ms", ins.timer_resolution_ms}}));
    } else if (code == "no-arm-kernel" && !cell.kernel_counts.empty()) {
      const auto count = static_cast<std::int64_t>(
          std::count(cell.kernel_counts.begin(), cell.kernel_counts.end(), std::int64_t{0}));
      if (count > 0)
        out.push_back(cell_defect(
            code, cell.key,
            fmt::format("{}: {} of {} timed steps ran no kernel on the device (the work was "
                        "done elsewhere, or not at all)",
                        where, count, cell.kernel_counts.size()),
            {{"samples", count}}));
    } else if (code == "graph-under-kernel-clock" && !cell.graph_kernel_counts.empty()) {
      // CUPTI's records of graph kernel nodes cost the events time per node (measured on the
      // H200: about 2.3 us per node, docs/evidence/kernel-clock-h200.md), so a step replaying
      // a graph is slower with the clock on than without it.
      const auto &graph = cell.graph_kernel_counts;
      const std::int64_t most = *std::max_element(graph.begin(), graph.end());
      const auto with = static_cast<std::int64_t>(
          std::count_if(graph.begin(), graph.end(), [](std::int64_t v) { return v > 0; }));
      if (most > 0)
        out.push_back(cell_defect(
            code, cell.key,
            fmt::format("{}: in {} of {} samples up to {} kernels ran as CUDA graph nodes "
                        "while the kernel clock was on; its records of graph nodes cost the "
                        "events time per node, so this cell's step times are inflated (time "
                        "it again with the clock off: measurement.kernel_clock: false, or "
                        "PREREG_KERNEL_CLOCK=off)",
                        where, with, graph.size(), most),
            {{"samples", with}, {"max_graph_kernels", most}}));
    } else if (code == "drift" && has_flag(s, "drift")) {
      out.push_back(cell_defect(code, cell.key,
                                fmt::format("{} samples trend with repetition index "
                                            "(Spearman rho {:.3f}, n = {})",
                                            where, s.spearman_rho, s.n),
                                {{"spearman_rho", s.spearman_rho}, {"n", s.n}}));
    }
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
  std::vector<report_defect> out;
  for (const std::string_view code : codes)
    detect(code, proto, run, stats, registry, out);
  return out;
}

std::vector<report_defect> detect_defects(const protocol &proto, const raw_run &run,
                                          std::span<const cell_statistics> stats) {
  return detect_defects(proto, run, stats,
                        [&](const arm_spec &arm) { return find_arm(proto.device, arm.kernel); });
}

} // namespace prereg
