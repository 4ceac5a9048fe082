// The named regions of Python arms' steps (python_regions.hpp), and attach_regions
// (outside_arm.hpp): the logged windows lined up with each cell's samples.
#include "arms/python_regions.hpp"

#include "arms/outside_arm.hpp"
#include "device/kernel_windows.hpp"

#include <algorithm>
#include <optional>

namespace prereg {
namespace outside {
namespace {

std::vector<region_log> g_region_logs; // the measuring process is single-threaded

/// Label -> ms per sample from the log's last n windows (a label a window did not mark: 0).
std::map<std::string, std::vector<double>> region_times(const region_log &log, std::size_t first,
                                                        std::size_t n) {
  std::map<std::string, std::vector<double>> out;
  for (std::size_t i = 0; i < n; ++i)
    for (const auto &[label, ms] : log.windows[first + i])
      out[label].resize(n, 0.0);
  for (auto &[label, times] : out)
    for (std::size_t i = 0; i < n; ++i) {
      const auto &w = log.windows[first + i];
      const auto found = w.find(label);
      times[i] = found == w.end() ? 0.0 : found->second;
    }
  return out;
}

/// The kernel clock's time per region: only when every sample's marks line up with the labels
/// the arm entered (docs/python-arms.md, "Regions"); else nothing.
std::optional<std::map<std::string, std::vector<double>>>
region_kernels(const region_log &log, std::size_t first, std::size_t n,
               const std::map<std::string, std::vector<double>> &times,
               const std::vector<std::optional<std::vector<double>>> &marks) {
  std::map<std::string, std::vector<double>> kernels;
  for (const auto &[label, ms] : times)
    kernels[label].assign(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto sums =
        marks[i] ? region_kernel_sums(log.orders[first + i], *marks[i]) : std::nullopt;
    if (!sums)
      return std::nullopt;
    for (const auto &[label, ms] : *sums) {
      const auto k = kernels.find(label);
      if (k == kernels.end()) // a region the events did not time (captured): no match
        return std::nullopt;
      k->second[i] = ms;
    }
  }
  return kernels;
}

} // namespace

region_log &log_of(const cell_key &key) {
  for (auto &l : g_region_logs)
    if (l.key == key)
      return l;
  g_region_logs.push_back({key, {}, {}, false, false});
  return g_region_logs.back();
}

} // namespace outside

void attach_regions(raw_run &raw) {
  using namespace outside;
  for (auto &cell : raw.cells) {
    std::vector<std::optional<std::vector<double>>> marks;
    marks.swap(cell.region_kernel_marks); // engine-internal: never leaves the process
    const auto it = std::find_if(g_region_logs.begin(), g_region_logs.end(),
                                 [&](const region_log &l) { return l.key == cell.key; });
    if (it == g_region_logs.end() || it->poisoned)
      continue;
    const std::size_t n = cell.samples_ms.size();
    if (it->windows.size() < n)
      continue; // cannot line up (not seen): no regions rather than wrong ones
    const std::size_t first = it->windows.size() - n; // the warm-up windows come first
    std::map<std::string, std::vector<double>> out = region_times(*it, first, n);
    if (!out.empty() && marks.size() == n) // orders has one entry per window, like windows
      if (auto kernels = region_kernels(*it, first, n, out, marks))
        cell.region_kernels_ms = std::move(*kernels);
    cell.regions_ms = std::move(out);
  }
  g_region_logs.clear();
}

} // namespace prereg
