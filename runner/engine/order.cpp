// The order of a group's windows (docs/engine.md): each cell warmed up until its per-call time
// settles, then its repetitions, per cell in arm order (sequential) or in rounds with the arms
// shuffled per repetition by the run's seeded generator (interleaved).
#include "base/stats.hpp"
#include "engine/measure.hpp"
#include "engine/timing.hpp"
#include "spec/stop_rule.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace prereg::engine_detail {
namespace {

/// Warm-up settles when the last settle_window windows spread by <= settle_spread x median;
/// at most settle_cap_extra windows beyond the protocol's warmup.
constexpr std::size_t settle_window = 3;
constexpr double settle_spread = 0.5;
constexpr std::int64_t settle_cap_extra = warmup_settle_extra;

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
  const std::int64_t reps = m_ctx.proto.measurement.repetitions; // stop.max under a rule
  for (std::size_t ci = 0; ci < m_cells.size(); ++ci) {
    while (warming(m_cells[ci]))
      window(ci, false, -1);
    for (std::int64_t r = 0; r < reps && !m_cells[ci].failed; ++r) {
      window(ci, true, spot_slot(r));
      if (stop_now(m_cells[ci]))
        break;
    }
    finish(m_cells[ci]);
  }
}

void group_timing::run_interleaved() {
  for (bool any = true; any;) { // rounds in arm order
    any = false;
    for (std::size_t ci = 0; ci < m_cells.size(); ++ci)
      if (warming(m_cells[ci])) {
        window(ci, false, -1);
        any = true;
      }
  }
  if (m_ctx.proto.measurement.stop)
    run_interleaved_stop();
  else
    run_interleaved_fixed();
}

/// One round's order: arm order shuffled by Fisher-Yates with the run's one generator.
static void shuffle_round(std::vector<std::size_t> &idx, rng &order) {
  for (std::size_t j = 0; j < idx.size(); ++j)
    idx[j] = j;
  for (std::size_t j = idx.size(); j > 1; --j)
    std::swap(idx[j - 1], idx[order.below(j)]);
}

void group_timing::run_interleaved_fixed() {
  const std::int64_t reps = m_ctx.proto.measurement.repetitions;
  std::vector<std::size_t> idx(m_cells.size());
  for (std::int64_t r = 0; r < reps; ++r) {
    shuffle_round(idx, m_totals.order);
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

/// Under a stopping rule: rounds as under fixed repetitions (every cell stays in the shuffle,
/// so the order does not depend on when cells stop), each cell sampled until it stops or fails;
/// a cell is finished when it stops, a failed one after the last round.
void group_timing::run_interleaved_stop() {
  std::vector<std::size_t> idx(m_cells.size());
  std::vector<bool> done(m_cells.size(), false);
  for (std::int64_t r = 0; std::find(done.begin(), done.end(), false) != done.end(); ++r) {
    shuffle_round(idx, m_totals.order);
    for (const std::size_t ci : idx) {
      if (done[ci] || m_cells[ci].failed) {
        done[ci] = true;
        continue;
      }
      window(ci, true, spot_slot(r));
      if (stop_now(m_cells[ci])) {
        done[ci] = true;
        finish(m_cells[ci]);
      }
    }
  }
  for (auto &c : m_cells)
    if (c.failed)
      finish(c);
}

bool group_timing::stop_now(cell_state &c) {
  const auto &rule = m_ctx.proto.measurement.stop;
  if (!rule || c.failed)
    return false;
  const stopwatch sw(m_totals.parts.stopping_rule);
  const std::vector<double> &s = c.record.samples_ms;
  const std::size_t n = s.size();
  if (n < static_cast<std::size_t>(rule->min))
    return false;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - c.first_sample).count();
  const stop_precision p =
      stop_check(s, m_ctx.proto.analysis.confidence, stop_seed(m_ctx.plan.seed, c.record.key));
  std::string reason;
  if (precise_enough(*rule, p, n))
    reason = "precision";
  else if (n >= static_cast<std::size_t>(rule->max))
    reason = "max";
  else if (seconds >= rule->max_seconds)
    reason = "max_seconds";
  else
    return false;
  c.stopped = true;
  c.record.stop = stop_record{reason, p.rel_ci, p.lo_ms, p.hi_ms, seconds};
  return true;
}

} // namespace prereg::engine_detail
