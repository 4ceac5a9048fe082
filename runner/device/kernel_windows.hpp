// The kernel clock's records cut into timed windows and named regions (docs/engine.md, "The
// kernel clock"). The device reports every kernel it ran with its start and end; the engine
// brackets each timed window with two mark kernels (prereg_window_open / _close), and a Python
// arm's `with t.region(label)` brackets a region with two more (prereg_region_open / _close).
// This is the device-independent part: which kernels belong to which window and region.
#pragma once

#include "device/device.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace prereg {

/// One kernel execution as the device's activity records give it.
struct kernel_event {
  std::uint64_t start = 0;    ///< device time [ns]
  std::uint64_t end = 0;      ///< device time [ns]
  const char *name = nullptr; ///< the record's (mangled) name; lives as long as the records
  bool graph = false;         ///< it ran as a node of a CUDA graph (CUPTI's graphId != 0)
};

/// What a kernel is to the instrument: one of its four marks, or an arm's kernel.
enum class mark_kind { none, window_open, window_close, region_open, region_close };

/// The mark a kernel name is (the marks' names contain prereg_window_open, ...), else none.
[[nodiscard]] mark_kind mark_of(const char *name);

/// Cuts `events` (any order) into windows: each window_open mark with the first window_close
/// after it, in time order. A window's kernels are the non-mark kernels that overlap the time
/// between the open mark's end and the close mark's start; kernel_ms is the union of their
/// intervals, names their per-name sums (named by `display`, in first-start order).
/// Inside a window, region_open / region_close marks pair like brackets (innermost first);
/// region_kernel_ms gets, per region in the order its open mark ran, the union of the intervals
/// of the kernels overlapping the time between its marks (a kernel counts in every region
/// around it). A window whose region marks do not pair gets regions_ok = false and no regions.
/// On return `events` holds only the records after the last window (windows still to come).
[[nodiscard]] std::vector<window_kernels>
segment_windows(std::vector<kernel_event> &events,
                const std::function<std::string(const char *)> &display);

/// A sample's kernel time per region label: `labels` names the regions of one window in the
/// order their open marks ran (the arm's `with` blocks in entry order), `region_kernel_ms` is
/// that window's region_kernel_ms. Returns label -> summed kernel ms, or nothing when the two
/// do not line up (a region the clock did not see, or one it saw that the arm did not mark).
[[nodiscard]] std::optional<std::map<std::string, double>>
region_kernel_sums(const std::vector<std::string> &labels,
                   const std::vector<double> &region_kernel_ms);

} // namespace prereg
