// The kernel clock's records of a group's windows (docs/engine.md, "The kernel clock"): taken
// from the device in batches and appended to the cells of the samples they belong to.
#include "engine/timing.hpp"

#include <algorithm>

namespace prereg::engine_detail {

void add_kernels(cell_record &rec, const window_kernels &w) {
  const std::size_t before = rec.kernel_ms.size();
  rec.kernel_ms.push_back(w.kernel_ms);
  rec.kernel_counts.push_back(w.count);
  rec.graph_kernel_counts.push_back(w.graph_count);
  rec.region_kernel_marks.push_back(w.regions_ok ? std::optional(w.region_kernel_ms)
                                                 : std::nullopt);
  for (const auto &n : w.names) {
    auto it = std::find_if(rec.kernel_names.begin(), rec.kernel_names.end(),
                           [&](const kernel_name_record &r) { return r.name == n.name; });
    if (it == rec.kernel_names.end()) {
      rec.kernel_names.push_back({n.name, 0, std::vector<double>(before, 0.0)});
      it = rec.kernel_names.end() - 1;
    }
    it->calls += n.calls;
    it->samples_ms.push_back(n.ms);
  }
  for (auto &r : rec.kernel_names)
    if (r.samples_ms.size() < before + 1)
      r.samples_ms.push_back(0.0);
}

void clock_lost(cell_state &c) {
  c.record.kernel_ms.clear();
  c.record.kernel_counts.clear();
  c.record.graph_kernel_counts.clear();
  c.record.kernel_names.clear();
  c.record.region_kernel_marks.clear();
  if (!c.record.error)
    c.record.error = "the kernel clock lost the records of some of this cell's windows";
}

/// Takes the pending windows' kernels from the device: each kept sample's go to its cell;
/// fewer than pending (the clock lost some) fail the kernel facts of every cell among them.
void group_timing::collect() {
  if (m_pending.empty())
    return;
  const stopwatch sw(m_totals.parts.kernel_records);
  std::vector<window_kernels> got = m_ctx.dev.take_window_kernels();
  const bool complete = got.size() == m_pending.size();
  for (std::size_t i = 0; i < m_pending.size(); ++i) {
    cell_state &c = m_cells[m_pending[i].ci];
    if (!m_pending[i].keep)
      continue;
    if (complete)
      add_kernels(c.record, got[i]);
    else
      clock_lost(c);
  }
  m_pending.clear();
}

} // namespace prereg::engine_detail
