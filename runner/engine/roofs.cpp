// The roofs beside the copy ceiling (docs/engine.md, "The roofs"): the read and write ceilings
// and a compute ceiling per element type the protocol's cells compute in, each timed as the
// copy ceiling is (a median of windows), before the first cell's sample.
#include "engine/instrument.hpp"

#include "spec/roofs.hpp"

#include <functional>
#include <set>
#include <string>

namespace prereg::engine_detail {
namespace {

/// The element types whose compute ceiling the cells need: per pass of the protocol whose
/// operation declares FLOPs for it, the pass's compute type (operation_desc::compute_type).
std::set<std::string> needed_compute_types(const protocol &proto) {
  std::set<std::string> out;
  const operation_desc *op = find_operation(proto.op);
  if (op == nullptr)
    return out;
  for (const pass_kind pass : proto.passes)
    if (const op_pass_formulas *f = op->formulas_of(pass); f != nullptr && !f->flops.empty())
      out.insert(op->compute_type(proto.type, pass));
  return out;
}

/// `step` timed `warmup` + `runs` times; the kept times [ms]. Not flushed: a stream is at least
/// twice the last-level cache (a sweep that size misses in an LRU cache whatever the last
/// window left), and a compute ceiling is bound by its arithmetic.
std::vector<double> time_windows(run_context &ctx, const std::function<void()> &step, int warmup,
                                 int runs) {
  std::vector<double> kept;
  for (int i = 0; i < warmup + runs; ++i) {
    const double ms = ctx.dev.timed(step).ms;
    if (i >= warmup)
      kept.push_back(ms);
    ctx.progress.tick();
  }
  return kept;
}

/// The write and then the read ceiling over `buffer` (`ip.stream_bytes`; the writes fill it, so
/// the reads read what was written).
void time_streams(run_context &ctx, const instrument_plan &ip, const stream_methods &m,
                  void *buffer, roofs_record &r) {
  device &dev = ctx.dev;
  const std::size_t bytes = ip.stream_bytes;
  ctx.progress.phase("write ceiling");
  r.write = {m.write, bytes,
             time_windows(
                 ctx, [&] { dev.write_stream(buffer, bytes); }, ip.stream_warmup, ip.stream_runs),
             0.0};
  ctx.progress.phase("read ceiling");
  r.read = {m.read, bytes,
            time_windows(
                ctx, [&] { dev.read_stream(buffer, bytes); }, ip.stream_warmup, ip.stream_runs),
            0.0};
}

/// One element type's compute ceiling, or why there is none. A failure of the ceiling's own
/// work (a library call) is recorded as its reason unless it broke the device.
compute_roof time_compute(run_context &ctx, const instrument_plan &ip, const std::string &type) {
  compute_roof out;
  try {
    std::string why_not;
    const std::unique_ptr<compute_step> step = ctx.dev.compute_ceiling(type, why_not);
    if (!step) {
      out.unknown = why_not.empty() ? "not measured" : why_not;
      return out;
    }
    out.method = step->method;
    out.shape = step->shape;
    out.flops = step->flops;
    out.samples_ms = time_windows(
        ctx, [&] { step->run(); }, ip.compute_warmup, ip.compute_runs);
  } catch (const error &e) {
    if (ctx.dev.broken())
      throw;
    out = compute_roof{};
    out.unknown = std::string("failed: ") + e.what();
  }
  return out;
}

} // namespace

void time_roofs(run_context &ctx, const instrument_plan &ip, void *spare, std::size_t spare_bytes) {
  const std::optional<stream_methods> methods = ctx.dev.stream_roofs();
  if (!methods || ip.stream_bytes == 0 || ip.stream_runs < 1)
    return;
  roofs_record r;
  if (spare != nullptr && spare_bytes >= ip.stream_bytes) {
    time_streams(ctx, ip, *methods, spare, r);
  } else {
    void *buffer = ctx.dev.allocate(ip.stream_bytes);
    try {
      time_streams(ctx, ip, *methods, buffer, r);
    } catch (...) {
      ctx.dev.release(buffer);
      throw;
    }
    ctx.dev.release(buffer);
  }
  for (const std::string &type : needed_compute_types(ctx.proto)) {
    ctx.progress.phase("compute ceiling " + type);
    r.compute[type] = time_compute(ctx, ip, type);
  }
  derive_roofs(r);
  ctx.raw.instrument.roofs = std::move(r);
}

} // namespace prereg::engine_detail
