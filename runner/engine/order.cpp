// The order of a group's windows (docs/engine.md): each cell warmed up until its per-call time
// settles, then its repetitions, per cell in arm order (sequential) or in rounds with the arms
// shuffled per repetition by the run's seeded generator (interleaved).
#include "base/stats.hpp"
#include "engine/timing.hpp"

#include <algorithm>
#include <utility>

namespace prereg::engine_detail {
namespace {

/// Warm-up settles when the last settle_window windows spread by <= settle_spread x median;
/// at most settle_cap_extra windows beyond the protocol's warmup.
constexpr std::size_t settle_window = 3;
constexpr double settle_spread = 0.5;
constexpr std::int64_t settle_cap_extra = 16;

/// Whether a cell's warm-up has settled: at least `settle_window` windows, the last of which
/// spread (max - min) by at most settle_spread x their median.
bool settled(const std::vector<double> &w) {
  if (w.size() < settle_window)
    return false;
  const auto last = std::vector<double>(w.end() - settle_window, w.end());
  const auto [lo, hi] = std::minmax_element(last.begin(), last.end());
  return *hi - *lo <= settle_spread * median(last);
}

} // namespace

/// Warm-up: `warmup` windows, then more until the per-call time settles (at most
/// warmup + settle_cap_extra windows); none when the protocol asks for none.
bool group_timing::warming(const cell_state &c) const {
  const std::int64_t warmup = m_ctx.proto.measurement.warmup;
  const auto n = static_cast<std::int64_t>(c.warmup_ms.size());
  if (c.failed || n >= warmup + settle_cap_extra)
    return false;
  return n < warmup || (warmup > 0 && !settled(c.warmup_ms));
}

void group_timing::run_sequential() {
  const std::int64_t reps = m_ctx.proto.measurement.repetitions;
  for (std::size_t ci = 0; ci < m_cells.size(); ++ci) {
    while (warming(m_cells[ci]))
      window(ci, false, -1);
    for (std::int64_t r = 0; r < reps; ++r)
      window(ci, true, spot_slot(r));
    finish(m_cells[ci]);
  }
}

void group_timing::run_interleaved() {
  const std::int64_t reps = m_ctx.proto.measurement.repetitions;
  for (bool any = true; any;) { // rounds in arm order
    any = false;
    for (std::size_t ci = 0; ci < m_cells.size(); ++ci)
      if (warming(m_cells[ci])) {
        window(ci, false, -1);
        any = true;
      }
  }
  std::vector<std::size_t> idx(m_cells.size());
  for (std::int64_t r = 0; r < reps; ++r) {
    for (std::size_t j = 0; j < idx.size(); ++j)
      idx[j] = j;
    for (std::size_t j = idx.size(); j > 1; --j) // Fisher-Yates, one generator per run
      std::swap(idx[j - 1], idx[m_totals.order.below(j)]);
    for (const std::size_t ci : idx) {
      window(ci, true, spot_slot(r));
      if (r + 1 == reps)
        finish(m_cells[ci]);
    }
  }
  if (reps == 0)
    for (auto &c : m_cells)
      finish(c);
}

} // namespace prereg::engine_detail
