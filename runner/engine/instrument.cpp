// The instrument (instrument.hpp): each of its facts measured in turn, as the samples will be.
#include "engine/instrument.hpp"

#include "base/stats.hpp"

#include <chrono>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace prereg::engine_detail {
namespace {

/// The timer's resolution and the cache size, measured in this process.
void take_timer(run_context &ctx, const instrument_plan &ip) {
  instrument_record &in = ctx.raw.instrument;
  const auto res = ctx.dev.timer_resolution();
  in.timer_resolution_ms = res.ms;
  if (!res.source.empty())
    ctx.raw.environment["timer_resolution_source"] = res.source;
  in.llc_bytes = ip.llc_bytes;
}

/// The timer's resolution, the cache size and the flush buffer.
void prepare_timer_and_flush(run_context &ctx, const instrument_plan &ip) {
  instrument_record &in = ctx.raw.instrument;
  take_timer(ctx, ip);
  ctx.progress.tick();
  ctx.dev.prepare_flush();
  ctx.progress.tick();
  in.flush_bytes = ctx.proto.measurement.l2_flush ? ip.flush_bytes : 0;
  in.flush_method = ctx.proto.measurement.l2_flush ? ip.flush_method : "none";
}

/// A grading's submission process: the timer's resolution measured here, the flush buffer
/// prepared only when samples are flushed, the launch floor, the copy ceiling and the roofs as
/// given.
void take_given(run_context &ctx, const instrument_plan &ip, const instrument_record &given) {
  instrument_record &in = ctx.raw.instrument;
  take_timer(ctx, ip);
  const bool flush = ctx.proto.measurement.l2_flush;
  if (flush)
    ctx.dev.prepare_flush();
  in.flush_bytes = flush ? ip.flush_bytes : 0;
  in.flush_method = flush ? ip.flush_method : "none";
  in.launch_floor_ms = given.launch_floor_ms;
  in.ceiling_bytes = given.ceiling_bytes;
  in.ceiling_samples_gbps = given.ceiling_samples_gbps;
  in.ceiling_gbps = given.ceiling_gbps;
  in.roofs = given.roofs; // the read, write and compute ceilings, where the baseline measured them
  ctx.progress.tick();
}

/// The launch floor: the empty step timed exactly as a cell's sample (flushed first when
/// samples are).
void time_launch_floor(run_context &ctx, const instrument_plan &ip) {
  ctx.progress.phase("launch floor");
  device &dev = ctx.dev;
  const std::function<void()> empty = [&] { dev.empty_step(); };
  const bool flush = ctx.proto.measurement.l2_flush;
  for (int i = 0; i < ip.floor_warmup; ++i) {
    if (flush)
      dev.flush();
    (void)dev.timed(empty);
    ctx.progress.tick();
  }
  std::vector<double> floor;
  for (int i = 0; i < ip.floor_steps; ++i) {
    if (flush)
      dev.flush();
    floor.push_back(dev.timed(empty).ms);
    ctx.progress.tick();
  }
  ctx.raw.instrument.launch_floor_ms = floor.empty() ? 0.0 : median(floor);
}

/// The copy ceiling's samples: flushed copies of `bytes` from src to dst.
void time_copies(run_context &ctx, const instrument_plan &ip, void *dst, void *src,
                 std::size_t bytes) {
  device &dev = ctx.dev;
  instrument_record &in = ctx.raw.instrument;
  dev.fill_uniform(src, bytes / 4, dtype::fp32, -1.0, 1.0, 7, 0, 0.0);
  const std::function<void()> copy = [&] { dev.copy(dst, src, bytes); };
  for (int i = 0; i < ip.ceiling_warmup; ++i) {
    dev.flush();
    ctx.progress.tick();
    (void)dev.timed(copy);
    ctx.progress.tick();
  }
  in.ceiling_samples_gbps.clear();
  for (int i = 0; i < ip.ceiling_copies; ++i) {
    dev.flush();
    ctx.progress.tick();
    const double ms = dev.timed(copy).ms;
    ctx.progress.tick();
    in.ceiling_samples_gbps.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
}

/// The plan's earlier ceiling taken instead of a measurement, when it was measured with this
/// instrument's copy size and flush (docs/engine.md, "Reusing the copy ceiling"); false: measure.
bool reuse_ceiling(run_context &ctx, const instrument_plan &ip) {
  const json &e = ctx.plan.reuse_ceiling;
  if (!e.is_object())
    return false;
  instrument_record &in = ctx.raw.instrument;
  try {
    if (e.at("ceiling_bytes").get<std::uint64_t>() != ip.ceiling_bytes ||
        e.at("flush_bytes").get<std::uint64_t>() != ip.flush_bytes ||
        e.at("flush_method").get<std::string>() != ip.flush_method)
      return false;
    in.ceiling_samples_gbps = e.at("ceiling_samples_gbps").get<std::vector<double>>();
    in.ceiling_gbps = e.at("ceiling_gbps").get<double>();
  } catch (const std::exception &) {
    in.ceiling_samples_gbps.clear();
    return false;
  }
  in.ceiling_bytes = ip.ceiling_bytes;
  in.ceiling_reused = e;
  return true;
}

/// The copy ceiling: the median bandwidth of time_copies, in buffers of its own; then the roofs
/// (roofs.cpp), their streams over the copy's destination. A reused ceiling measures no roofs
/// (they are not in the cache entry: docs/engine.md, "The roofs").
void time_ceilings(run_context &ctx, const instrument_plan &ip) {
  ctx.progress.phase("ceiling");
  if (reuse_ceiling(ctx, ip))
    return;
  device &dev = ctx.dev;
  instrument_record &in = ctx.raw.instrument;
  const std::size_t bytes = ip.ceiling_bytes;
  void *src = dev.allocate(bytes);
  void *dst = nullptr;
  try {
    dst = dev.allocate(bytes);
    time_copies(ctx, ip, dst, src, bytes);
    in.ceiling_gbps = in.ceiling_samples_gbps.empty() ? 0.0 : median(in.ceiling_samples_gbps);
    in.ceiling_bytes = bytes;
    time_roofs(ctx, ip, dst, bytes);
  } catch (...) {
    dev.release(src);
    if (dst != nullptr)
      dev.release(dst);
    throw;
  }
  dev.release(src);
  dev.release(dst);
}

/// The kernel clock (docs/engine.md): on for every window from here (the untraced floor and
/// the ceiling are already measured), and the empty step timed again with it on, so that the
/// clock's own cost is in the record (kernel_clock_floor_ms against launch_floor_ms).
void start_kernel_clock(run_context &ctx, bool flush, const instrument_plan &ip) {
  device &dev = ctx.dev;
  instrument_record &in = ctx.raw.instrument;
  if (!ctx.proto.measurement.kernel_clock) {
    ctx.raw.environment["kernel_clock"] =
        "unknown: switched off by the protocol (measurement.kernel_clock: false)";
    return;
  }
  std::string why_not;
  const auto clock = dev.kernel_clock(true, why_not);
  if (!clock) {
    ctx.raw.environment["kernel_clock"] = "unknown: " + why_not;
    return;
  }
  ctx.raw.environment["kernel_clock"] = *clock;
  in.kernel_clock = *clock;
  ctx.progress.phase("kernel clock");
  const std::function<void()> empty = [&] { dev.empty_step(); };
  std::vector<double> floor;
  for (int i = 0; i < ip.floor_warmup + ip.floor_steps; ++i) {
    if (flush)
      dev.flush();
    const double ms = dev.timed(empty).ms;
    if (i >= ip.floor_warmup)
      floor.push_back(ms);
    ctx.progress.tick();
  }
  in.kernel_clock_floor_ms =
      floor.empty() ? std::numeric_limits<double>::quiet_NaN() : median(floor);
  (void)dev.take_window_kernels();
}

/// The idle drain: a device-wide synchronise with nothing queued, the baseline of the
/// off-window check (median of 9).
void measure_idle_drain(run_context &ctx) {
  std::vector<double> idle;
  for (int i = 0; i < 9; ++i)
    if (const auto ms = ctx.dev.drain())
      idle.push_back(*ms);
  if (!idle.empty()) {
    ctx.idle_drain_ms = median(idle);
    ctx.raw.environment["off_window_idle_ms"] = ctx.idle_drain_ms;
  }
}

/// The device's state reader (docs/engine.md, "Device state"): what it is, or "unknown: WHY";
/// its cost, the median host time of 9 readings [ms], as environment.device_state_read_ms.
void open_state_reader(run_context &ctx) {
  std::string why_not;
  const auto reader = ctx.dev.state_reader(why_not);
  if (!reader) {
    ctx.raw.environment["device_state"] = "unknown: " + why_not;
    return;
  }
  ctx.raw.environment["device_state"] = *reader;
  std::vector<double> cost;
  for (int i = 0; i < 9; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    (void)ctx.dev.read_state();
    cost.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  ctx.raw.environment["device_state_read_ms"] = median(cost);
  ctx.state_on = true;
}

} // namespace

void calibrate(run_context &ctx) {
  ctx.progress.phase("instrument");
  const instrument_plan ip = ctx.dev.instrument();
  if (const auto &given = ctx.hooks.given_instrument) {
    take_given(ctx, ip, *given);
  } else {
    prepare_timer_and_flush(ctx, ip);
    time_launch_floor(ctx, ip);
    time_ceilings(ctx, ip);
  }
  ctx.raw.instrument.clock_start_mhz = ctx.dev.clock_mhz();
  start_kernel_clock(ctx, ctx.proto.measurement.l2_flush, ip);
  measure_idle_drain(ctx);
  open_state_reader(ctx);
}

} // namespace prereg::engine_detail
