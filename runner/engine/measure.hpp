// The measurement engine (docs/engine.md): the one procedure that turns a plan into raw facts
// on any device. Backends supply device primitives only (device/device.hpp).
#pragma once

#include "device/device.hpp"
#include "spec/arm_code.hpp"
#include "spec/operation.hpp"
#include "spec/records.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace prereg {

/// Warm-up windows a cell may take beyond the protocol's `warmup` while its times have not
/// settled (docs/engine.md, "3. The samples", Warm-up); none when the protocol asks for none.
inline constexpr std::int64_t warmup_settle_extra = 16;

/// What a watched call of arm code is doing (docs/engine.md, "The watchdog"): the `what` of the
/// measuring process's watch page (base/watch.hpp), whose `who` is the arm's index in the
/// protocol (-1: no arm, e.g. an operation file's reference) and `where` the plan cell's index.
enum class call_phase : int {
  load = 1,        ///< loading an outside arm (its import or dlopen)
  setup = 2,       ///< binding an arm to a buffer set (an outside arm's setup)
  correctness = 3, ///< the correctness run: the arm's first call and its outputs
  warmup = 4,      ///< an untimed warm-up window
  sample = 5,      ///< a timed sample's window, its drain, read-back and spot check
  capture = 6,     ///< a graph arm's capture
  teardown = 7,    ///< an outside arm's teardown
  reference = 8,   ///< an operation file's float64 reference
};
/// "load", "setup", "correctness run", "warm-up", "timed sample", "graph capture", "teardown",
/// "reference"; "call" for any other value.
[[nodiscard]] std::string_view to_string(call_phase p);

/// Test hooks of the engine, and what a grading gives it; the defaults are what `prereg run`
/// uses.
struct engine_hooks {
  /// A grading's submission process (docs/grading.md): the launch floor and the copy ceiling
  /// measured by its baseline's process, where no submission's code was loaded; the
  /// instrument phase takes them from here instead of timing them (and prepares no flush
  /// buffer when the protocol does not flush).
  std::optional<instrument_record> given_instrument;
  /// Called before each timed sample (outside its window, before the flush) with its cell.
  std::function<void(const cell_key &cell)> on_sample;
  /// Called before each cell's correctness run with its cell.
  std::function<void(const cell_key &cell)> on_check;
  /// Called before each untimed warm-up window with its cell.
  std::function<void(const cell_key &cell)> on_warmup;
};

/// Why `dev` cannot take this cell of `arm` beyond the registry's static limits (its memory
/// estimate does not fit the device's budget, or graph launch on a device that cannot
/// capture), or nullopt. The engine's memory estimate is documented in docs/engine.md.
[[nodiscard]] std::optional<std::string>
device_cannot_run(const device &dev, const operation_desc &op, const arm_info &arm,
                  const arm_spec &spec, pass_kind pass, std::int64_t rows, std::int64_t cols,
                  dtype type);
/// The same for cell `k` (its shape may be over named axes).
[[nodiscard]] std::optional<std::string>
device_cannot_run(const device &dev, const operation_desc &op, const arm_info &arm,
                  const arm_spec &spec, const cell_key &k, dtype type);

/// Measures `plan` on `dev`: the correctness gate of every cell's arm x pass x shape on fresh
/// random inputs with poisoned outputs, the instrument (timer, flush, ceiling, floor, clock),
/// then every cell's samples. `environment` is the device's probe(); arm code comes from
/// `resolve`. Arm failures are recorded on their cells; a broken device ends the run (throws).
[[nodiscard]] raw_run measure(device &dev, json environment, const run_plan &plan,
                              const arm_resolver &resolve, progress_sink &progress,
                              const engine_hooks &hooks = {});

} // namespace prereg
