// The tables of what was run and where: the run, the environment, the instrument, the design
// and the arms (every renderer).
#pragma once

#include "report/render/table.hpp"
#include "report/render/view.hpp"

namespace prereg::render {

/// The run: protocol, hash, freeze, run id and time, attempt, tool.
[[nodiscard]] table run_table(const view &v);

/// The environment: known facts first under readable names, then the rest by key, then the
/// device ordinal.
[[nodiscard]] table environment_table(const view &v);

/// The instrument: copy ceiling, launch floor, timer, cache flush, clock, kernel clock.
[[nodiscard]] table instrument_table(const view &v);

/// The design: device, operation, shapes, passes, operating point, measurement, analysis,
/// tolerance.
[[nodiscard]] table design_table(const view &v);

/// The arms: kernel, launch, repeat, and options where some arm sets them (prereg: 2);
/// renderer 3 shows each arm's code (kernel, or `python:`/`plugin:` file), entry (`function:`
/// or `name:`) and source hash from the freeze record.
[[nodiscard]] table arms_table(const view &v);

} // namespace prereg::render
