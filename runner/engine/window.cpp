// One window of a group's cell (timing.hpp): fresh inputs (or a spot check's host inputs) and
// poisoned outputs in the block this call uses, the flush, the timed step, then the
// off-window drain and what the sample records.
#include "engine/timing.hpp"

#include "base/sched.hpp"

#include <algorithm>
#include <cmath>

namespace prereg::engine_detail {
namespace {

/// The measuring thread's scheduling between two readings (records.hpp, sched_sample).
sched_sample sched_between(const sched_reading &a, const sched_reading &b) {
  sched_sample s;
  s.wall_ms = static_cast<double>(b.wall_ns - a.wall_ns) / 1e6;
  if (a.run_delay_ns >= 0 && b.run_delay_ns >= a.run_delay_ns)
    s.run_delay_ms = static_cast<double>(b.run_delay_ns - a.run_delay_ns) / 1e6;
  s.stops = static_cast<std::int64_t>(b.continues - a.continues);
  return s;
}

} // namespace

void group_timing::window(std::size_t ci, bool keep, std::int64_t slot) {
  cell_state &c = m_cells[ci];
  if (c.failed)
    return;
  device &dev = m_ctx.dev;
  try {
    if (m_pending.size() >= 256)
      collect(); // host work before the flush is queued, never between it and the window
    if (keep && c.samples == 0)
      c.first_sample = std::chrono::steady_clock::now();
    const std::int64_t block = c.calls % rotation_blocks;
    const spot_data *d = nullptr;
    if (slot >= 0) { // the spot's inputs drawn here; its host reference after the window
      const stopwatch sw(m_totals.parts.spot_checks);
      d = &spot_for(slot);
    }
    {
      const watched_call watch =
          m_ctx.watch(c.index, keep ? call_phase::sample : call_phase::warmup);
      if (keep && m_ctx.hooks.on_sample)
        m_ctx.hooks.on_sample(c.record.key);
      if (!keep && m_ctx.hooks.on_warmup)
        m_ctx.hooks.on_warmup(c.record.key);
      {
        const stopwatch sw(m_totals.parts.input_refresh);
        load_window(ci, block, d);
      }
      ++c.calls;
      if (m_ctx.proto.measurement.l2_flush)
        dev.flush();
      // The scheduling around the window alone: a pread and two clock reads after the flush is
      // queued, a few microseconds of host time that a device's flush still covers.
      const bool sched = keep && m_ctx.plan.record_sched;
      const sched_reading before = sched ? read_sched() : sched_reading{};
      window_result w;
      {
        const stopwatch sw(keep ? m_totals.parts.timed_windows : m_totals.parts.warmup_windows);
        w = dev.timed(timed_step(ci, block));
      }
      const sched_sample scheduled = sched ? sched_between(before, read_sched()) : sched_sample{};
      if (m_clock_on)
        m_pending.push_back({ci, false});
      std::optional<double> drained; // first: host work before it would hide pending work
      if (keep)
        drained = dev.drain();
      if (keep && m_ctx.state_on) { // the device's state as the window left it
        const stopwatch sw(m_totals.parts.device_state);
        c.record.states.push_back(dev.read_state());
      }
      for (const auto &v : m_args[ci][static_cast<std::size_t>(block)])
        if (v.bound)
          v.bound->after_window();
      if (c.graphs.empty())
        check_released(*c.alloc);
      if (!keep) {
        c.warmup_ms.push_back(w.ms);
        ++c.record.warmup_calls;
        return;
      }
      record_sample(c, w, drained);
      if (sched)
        c.record.sched.push_back(scheduled);
    }
    if (d != nullptr) { // an operation file's reference runs here: outside the arm's watch
      const stopwatch sw(m_totals.parts.spot_checks);
      reference_spot();
      const watched_call watch = m_ctx.watch(c.index, call_phase::sample);
      spot_check(c, block, *d);
    }
  } catch (const std::exception &e) {
    fail(c, e, keep ? "measurement" : "warmup");
  }
}

/// Before the flush: an outside arm's allocator statistics, then per invocation the poison
/// filled into its outputs and fresh inputs (or spot data `d`'s) into its inputs.
void group_timing::load_window(std::size_t ci, std::int64_t block, const spot_data *d) {
  const operation_desc &op = m_ctx.op;
  device &dev = m_ctx.dev;
  cell_state &c = m_cells[ci];
  const std::int64_t repeat_k = m_ctx.arms[c.index].spec->repeat;
  // An outside arm's allocator statistics are read before the flush is enqueued: host
  // work between the flush and the window would let the flush finish first and open
  // the window on an idle device, exposing the arm's call path where a built-in arm's
  // is hidden behind the flush (seen on the H200: torch.cuda.memory_allocated() takes
  // ~130 us of host time and turned a 6.6 us window into 29 us).
  for (const auto &v : m_args[ci][static_cast<std::size_t>(block)])
    if (v.bound)
      v.bound->before_window();
  for (std::int64_t k = 0; k < repeat_k; ++k) {
    const buffer_set &set = set_of(block, k);
    poison_outputs(dev, op, m_ctx.proto.type, m_pass, m_shape, set);
    if (d == nullptr) {
      fill_inputs(set, m_group_seed + 0x100000 * (ci + 1) +
                           16 * static_cast<std::uint64_t>(c.calls * repeat_k + k));
      continue;
    }
    for (std::size_t t = 0; t < op.tensors.size(); ++t)
      if (d->inputs && d->inputs->at(t) != nullptr)
        dev.copy(set.at(t), d->inputs->at(t),
                 static_cast<std::size_t>(op.elements(t, m_shape)) *
                     op.element_size(t, m_ctx.proto.type));
      else if (!d->bytes.empty() && !d->bytes[t].empty())
        dev.upload(set.at(t), d->bytes[t].data(), d->bytes[t].size());
  }
}

/// What the window times: a graph arm's replay of the block's capture, else its step.
std::function<void()> group_timing::timed_step(std::size_t ci, std::int64_t block) {
  cell_state &c = m_cells[ci];
  if (c.graphs.empty())
    return step_of(ci, block);
  return [this, &c, block] { m_ctx.dev.replay(*c.graphs[static_cast<std::size_t>(block)]); };
}

/// A kept sample's facts: its time, its kernels (taken later), harness memory in the window
/// and the work left pending after it (beyond the idle drain).
void group_timing::record_sample(cell_state &c, const window_result &w,
                                 std::optional<double> drained) {
  c.record.samples_ms.push_back(w.ms);
  if (m_clock_on)
    m_pending.back().keep = true; // this window's kernels are this sample's
  ++c.samples;
  c.record.harness_bytes_in_window = std::max(c.record.harness_bytes_in_window, w.harness_growth);
  if (drained) {
    const double idle = m_ctx.idle_drain_ms;
    const double pending = std::max(0.0, *drained - (std::isfinite(idle) ? idle : 0.0));
    c.record.off_window_ms =
        std::isnan(c.record.off_window_ms) ? pending : std::max(c.record.off_window_ms, pending);
  }
}

} // namespace prereg::engine_detail
