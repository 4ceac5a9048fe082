// The timed samples (timing.hpp): the groups in turn, and each group's set-up and teardown.
#include "engine/timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace prereg::engine_detail {

void time_cells(run_context &ctx) {
  ctx.progress.phase("timing");
  const auto gs = ctx.groups();
  timing_totals totals{std::vector<std::optional<cell_record>>(ctx.plan.cells.size()),
                       0,
                       0,
                       rng(stream_seed(ctx.plan.seed, stream_id::arm_order)),
                       {}};
  for (const auto &g : gs)
    totals.total += g.size();
  std::uint64_t group_index = 0;
  for (const auto &g : gs)
    group_timing(ctx, totals, g, group_index++).run();
  for (auto &d : totals.done)
    if (d)
      ctx.raw.cells.push_back(std::move(*d));
  const timing_parts &p = totals.parts;
  ctx.raw.timing_parts = {{"group setup", p.group_setup},     {"warm-up windows", p.warmup_windows},
                          {"timed windows", p.timed_windows}, {"input refresh", p.input_refresh},
                          {"spot checks", p.spot_checks},     {"kernel records", p.kernel_records}};
  if (ctx.state_on) // parts of their own only where they ran: earlier reports' lists stay
    ctx.raw.timing_parts.push_back({"device state", p.device_state});
  if (ctx.proto.measurement.stop)
    ctx.raw.timing_parts.push_back({"stopping rule", p.stopping_rule});
}

group_timing::group_timing(run_context &ctx, timing_totals &totals,
                           const std::vector<std::size_t> &group, std::uint64_t group_index)
    : m_ctx(ctx), m_totals(totals), m_k0(ctx.plan.cells[group.front()]), m_pass(m_k0.pass),
      m_shape(key_shape(ctx.op, m_k0)) {
  for (std::size_t i : group) {
    cell_state c;
    c.index = i;
    c.record.key = ctx.plan.cells[i];
    c.record.first_call_ms = ctx.first_call_ms[i];
    c.alloc = ctx.dev.make_arm_allocator();
    m_repeat = std::max(m_repeat, ctx.arms[i].spec->repeat);
    m_cells.push_back(std::move(c));
  }
  m_group_seed = stream_seed(ctx.plan.seed, stream_id::inputs) + 0x1000 * group_index;
  m_clock_on = !ctx.raw.instrument.kernel_clock.empty();
}

void group_timing::run() {
  {
    const stopwatch w(m_totals.parts.group_setup);
    if (!allocate_sets())
      return;
    bind_invocations();
    choose_spots();
    fail_setups();
    capture_graphs();
  }
  if (m_ctx.proto.measurement.order == order_mode::sequential)
    run_sequential();
  else
    run_interleaved();
  const stopwatch w(m_totals.parts.group_setup);
  release();
}

/// The rotation's buffer sets with fresh inputs. False: they could not be
/// allocated, and the group's cells are skipped like cells the plan left out (no record).
bool group_timing::allocate_sets() {
  try {
    for (std::int64_t k = 0; k < rotation_blocks * m_repeat; ++k) {
      m_sets.emplace_back(m_ctx.dev, m_ctx.op, m_shape, m_ctx.proto.type, m_pass);
      fill_inputs(m_sets.back(), m_group_seed + 16 * static_cast<std::uint64_t>(k));
    }
    m_ctx.dev.synchronize();
  } catch (const std::exception &e) {
    m_sets.clear();
    const std::string why =
        fmt::format("buffers for this shape could not be allocated: {}", describe(e));
    m_ctx.survive(m_k0, why);
    for (auto &c : m_cells) {
      m_ctx.raw.deviations.push_back(skip_deviation(c.record.key, why));
      m_ctx.progress.cell_done(++m_totals.finished, m_totals.total);
    }
    return false;
  }
  return true;
}

/// Fills the inputs of `set` with fresh random values (never zeros) from `seed`.
void group_timing::fill_inputs(const buffer_set &set, std::uint64_t seed) {
  const operation_desc &op = m_ctx.op;
  // A row of a per-row offset: cols, or over named axes the tensor's innermost dim.
  const auto row_length = [&](const tensor_desc &d) {
    return m_k0.named() ? m_shape.extents.at(static_cast<std::size_t>(op.axis_of(d.dims.back())))
                        : m_k0.cols;
  };
  for (std::size_t t = 0; t < op.tensors.size(); ++t) {
    const tensor_desc &d = op.tensors[t];
    if (d.role != tensor_role::input || !op.used_in(t, m_pass))
      continue;
    const bool per_row = d.dist.row_offset != 0 && d.dims.size() >= 2;
    const input_distribution dist = op.dist_at(t, m_shape); // integer bounds at this shape
    m_ctx.dev.fill_uniform(set.at(t), static_cast<std::size_t>(op.elements(t, m_shape)),
                           element_type(op, t, m_ctx.proto.type), dist.lo, dist.hi, seed + t,
                           per_row ? row_length(d) : 0, d.dist.row_offset);
  }
}

const buffer_set &group_timing::set_of(std::int64_t block, std::int64_t k) const {
  return m_sets[static_cast<std::size_t>(block * m_repeat + k)];
}

/// Each arm's invocation arguments per block: the shared buffer sets with its options (an
/// outside arm's setup, once per set: a failing setup fails its cell).
void group_timing::bind_invocations() {
  m_setup_errors.resize(m_cells.size());
  for (std::size_t ci = 0; ci < m_cells.size(); ++ci) {
    auto &c = m_cells[ci];
    auto &per_block = m_args.emplace_back(rotation_blocks);
    if (m_ctx.excluded[c.index] != nullptr)
      continue; // fails in fail_setups with the watchdog's reason
    const watched_call watch = m_ctx.watch(c.index, call_phase::setup);
    try {
      for (std::int64_t b = 0; b < rotation_blocks; ++b)
        for (std::int64_t k = 0; k < m_repeat; ++k)
          per_block[static_cast<std::size_t>(b)].push_back(
              make_invocation(m_ctx.op, set_of(b, k), m_k0, m_ctx.proto.type, m_pass,
                              m_ctx.arms[c.index], m_ctx.dev, *c.alloc));
    } catch (const std::exception &e) {
      for (auto &blk : per_block)
        blk.clear();
      m_setup_errors[ci] = describe(e);
    }
  }
}

void group_timing::fail_setups() {
  for (std::size_t ci = 0; ci < m_cells.size(); ++ci)
    if (const std::string *why = m_ctx.excluded[m_cells[ci].index]) {
      m_cells[ci].failed = true;
      m_cells[ci].record.error = *why;
    } else if (!m_setup_errors[ci].empty()) {
      cell_state &c = m_cells[ci];
      c.failed = true;
      c.record.error = fmt::format("setup: {}", m_setup_errors[ci]);
      c.alloc->release_all(!m_ctx.dev.broken());
      m_ctx.survive(c.record.key, *c.record.error);
    }
}

/// Graph arms: one capture per block, outside every window.
void group_timing::capture_graphs() {
  for (std::size_t ci = 0; ci < m_cells.size(); ++ci) {
    cell_state &c = m_cells[ci];
    if (c.failed)
      continue;
    if (m_ctx.arms[c.index].spec->launch != launch_mode::graph)
      continue;
    const watched_call watch = m_ctx.watch(c.index, call_phase::capture);
    try {
      for (std::int64_t b = 0; b < rotation_blocks; ++b) {
        auto &block = m_args[ci][static_cast<std::size_t>(b)];
        for (auto &v : block) // an outside arm's own allocator, read around the capture
          if (v.bound)
            v.bound->before_capture();
        c.graphs.push_back(m_ctx.dev.capture(step_of(ci, b)));
        for (auto &v : block)
          if (v.bound)
            v.bound->after_capture();
        check_released(*c.alloc);
      }
    } catch (const std::exception &e) {
      fail(c, e, "graph capture", false);
    }
  }
}

/// Cell ci's step on block `block`: its repeat invocations of the block's sets.
std::function<void()> group_timing::step_of(std::size_t ci, std::int64_t block) {
  const bound_arm &arm = m_ctx.arms[m_cells[ci].index];
  return [this, &arm, ci, block, repeat_k = arm.spec->repeat] {
    run_step(arm, m_pass, m_args[ci][static_cast<std::size_t>(block)], repeat_k, *m_cells[ci].alloc,
             m_ctx.dev.stream());
  };
}

/// An arm's failure: recorded on its cell; what it held is freed (after a failed capture
/// only forgotten: a graph's allocations never existed).
void group_timing::fail(cell_state &c, const std::exception &e, std::string_view during,
                        bool free_memory) {
  c.failed = true;
  c.record.error = fmt::format("{}: {}", during, describe(e));
  c.graphs.clear();
  c.alloc->release_all(free_memory && !m_ctx.dev.broken());
  m_ctx.survive(c.record.key, *c.record.error);
}

/// A cell's end: its kernel records taken, the clock read, its peak memory (an outside arm's
/// own allocator's too); the record moves to the run's.
void group_timing::finish(cell_state &c) {
  collect();
  if (!c.record.kernel_ms.empty() && c.record.kernel_ms.size() != c.record.samples_ms.size())
    clock_lost(c);
  if (!c.failed) {
    try {
      c.record.clock_mhz = m_ctx.dev.clock_mhz();
    } catch (const std::exception &e) {
      fail(c, e, "clock read after the cell");
    }
  }
  if (m_ctx.proto.measurement.stop && !c.record.stop) // a failed cell's samples ended early
    c.record.stop = stop_record{
        "error", std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::quiet_NaN(),
        c.samples == 0
            ? 0.0
            : std::chrono::duration<double>(std::chrono::steady_clock::now() - c.first_sample)
                  .count()};
  c.record.peak_bytes = c.alloc->peak();
  for (const auto &blk : m_args[static_cast<std::size_t>(&c - m_cells.data())])
    for (const auto &v : blk) // an outside arm's own allocator
      if (v.bound)
        if (auto own = v.bound->own_peak_bytes())
          c.record.peak_bytes = std::max(c.record.peak_bytes, *own);
  c.graphs.clear();
  m_totals.done[c.index] = std::move(c.record);
  m_ctx.progress.cell_done(++m_totals.finished, m_totals.total);
}

/// The group's bindings (outside arms' teardown) and buffers go before the next group's.
void group_timing::release() {
  for (std::size_t ci = 0; ci < m_args.size() && ci < m_cells.size(); ++ci) {
    const watched_call watch = m_ctx.watch(m_cells[ci].index, call_phase::teardown);
    m_args[ci].clear(); // an outside arm's teardown
  }
  m_args.clear();
  m_sets.clear();
  m_ctx.dev.trim();
}

} // namespace prereg::engine_detail
