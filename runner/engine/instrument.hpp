// The instrument (docs/engine.md): the timer, the flush, the launch floor, the copy ceiling,
// the kernel clock and the idle drain, measured before the first cell's sample.
#pragma once

#include "engine/context.hpp"

namespace prereg::engine_detail {

/// Measures the instrument into ctx.raw.instrument (and its environment facts), phases
/// "instrument", "launch floor", "ceiling" (and "kernel clock" when it is on); sets
/// ctx.idle_drain_ms where the device can drain.
void calibrate(run_context &ctx);

} // namespace prereg::engine_detail
