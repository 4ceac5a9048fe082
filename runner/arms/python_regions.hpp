// The named regions of Python arms' steps (docs/python-arms.md, "Regions"): what each cell's
// timed windows marked, logged in this (the measuring) process until attach_regions().
#pragma once

#include "spec/records.hpp"

#include <map>
#include <string>
#include <vector>

namespace prereg::outside {

/// The region sums of one cell's timed windows, in window order (warm-up windows first: the
/// engine runs a cell's warm-up before its samples in either order).
struct region_log {
  cell_key key;
  std::vector<std::map<std::string, double>> windows; ///< label -> ms, one per closed window
  /// Per closed window: the labels of the regions the kernel clock's marks bracket, in entry
  /// order (empty without the clock).
  std::vector<std::vector<std::string>> orders;
  bool pending = false;  ///< a window opened and no instance of it has closed it yet
  bool poisoned = false; ///< a harvest failed: the windows no longer line up with the samples
};

/// The log of cell `key` (made empty on first use).
[[nodiscard]] region_log &log_of(const cell_key &key);

} // namespace prereg::outside
