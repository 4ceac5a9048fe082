// The instrument (docs/engine.md): the timer, the flush, the launch floor, the copy ceiling, the
// roofs, the kernel clock and the idle drain, measured before the first cell's sample.
#pragma once

#include "engine/context.hpp"

#include <cstddef>

namespace prereg::engine_detail {

/// Measures the instrument into ctx.raw.instrument (and its environment facts), phases
/// "instrument", "launch floor", "ceiling" (and "kernel clock" when it is on); sets
/// ctx.idle_drain_ms where the device can drain.
void calibrate(run_context &ctx);

/// The write, read and compute ceilings (roofs.cpp; docs/engine.md, "The roofs") into
/// ctx.raw.instrument.roofs, where the device has them; phases "write ceiling", "read ceiling"
/// and "compute ceiling TYPE". The streams run over `spare` (the copy ceiling's destination)
/// when it holds ip.stream_bytes, else over a buffer of their own.
void time_roofs(run_context &ctx, const instrument_plan &ip, void *spare, std::size_t spare_bytes);

} // namespace prereg::engine_detail
