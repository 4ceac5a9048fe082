// The measurement engine (docs/engine.md is the normative description): a short driver over
// its phases on any device through its primitives: bind the plan's arms (context.cpp), the
// correctness gate (gate.cpp), the instrument (instrument.cpp), the timed samples (timing.cpp).
#include "engine/measure.hpp"

#include "arms/outside_arm.hpp"
#include "engine/context.hpp"
#include "engine/gate.hpp"
#include "engine/instrument.hpp"
#include "engine/timing.hpp"
#include "prereg/error.hpp"

#include <chrono>
#include <utility>
#include <vector>

namespace prereg {
namespace {

using engine_detail::run_context;

/// What the environment records before anything is measured: the outside arms, the skips.
void record_before(run_context &ctx, json environment) {
  ctx.raw.environment = std::move(environment);
  if (!ctx.loaded.empty()) {
    json arms = json::object();
    for (const auto &[id, arm] : ctx.loaded)
      arms[id] = arm->environment();
    ctx.raw.environment["outside_arms"] = std::move(arms);
  }
  for (std::size_t i = 0; i < ctx.plan.cells.size(); ++i)
    if (ctx.skip[i])
      ctx.record_skip(i);
}

/// What only the end of the run knows: the kernel clock's dropped records, the device's and
/// the Python runtime's facts.
void record_after(run_context &ctx) {
  if (!ctx.raw.instrument.kernel_clock.empty())
    ctx.raw.instrument.kernel_records_dropped = ctx.dev.kernel_records_dropped();
  ctx.dev.finish_environment(ctx.raw.environment);
  if (json py = python_environment(); !py.is_null())
    ctx.raw.environment["python"] = std::move(py);
}

} // namespace

std::string_view to_string(call_phase p) {
  switch (p) {
  case call_phase::load:
    return "load";
  case call_phase::setup:
    return "setup";
  case call_phase::correctness:
    return "correctness run";
  case call_phase::warmup:
    return "warm-up";
  case call_phase::sample:
    return "timed sample";
  case call_phase::capture:
    return "graph capture";
  case call_phase::teardown:
    return "teardown";
  case call_phase::reference:
    return "reference";
  }
  return "call";
}

raw_run measure(device &dev, json environment, const run_plan &plan, const arm_resolver &resolve,
                progress_sink &progress, const engine_hooks &hooks) {
  if (plan.proto == nullptr)
    throw io_error("measure: the run plan has no protocol");
  std::vector<phase_time> phases;
  auto last = std::chrono::steady_clock::now();
  const auto lap = [&](const char *name) { // the phase that ends now
    const auto now = std::chrono::steady_clock::now();
    phases.push_back({name, std::chrono::duration<double, std::milli>(now - last).count()});
    last = now;
  };
  run_context ctx(dev, plan, resolve, progress, hooks);
  record_before(ctx, std::move(environment));
  lap("arm binding");
  engine_detail::check_correctness(ctx);
  lap("correctness");
  engine_detail::calibrate(ctx);
  lap("instrument");
  engine_detail::time_cells(ctx);
  lap("timing");
  record_after(ctx);
  lap("finish");
  ctx.raw.phases = std::move(phases);
  return std::move(ctx.raw);
}

} // namespace prereg
