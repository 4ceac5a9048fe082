// The measuring side of `prereg run` (docs/engine.md, "The measuring process"): the device's
// probe, the plan and the measurement, either in this process or in a forked child that never
// holds the signing key and sends its raw facts back over a pipe.
#pragma once

#include "base/json.hpp"
#include "model/report_model.hpp"
#include "run/raw_json.hpp" // raw_to_json, raw_from_json: the facts that cross the pipe
#include "run/run.hpp"
#include "spec/protocol.hpp"
#include "spec/records.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace prereg {

/// What the device side found before measuring: the probe and the cells it can run.
struct measuring_plan {
  json environment = json::object(); ///< the device's probe()
  /// The measuring process's walls and their probes (report run.isolation); none when it
  /// measured in this process.
  std::optional<report_isolation> isolation;
  std::vector<cell_key> cells; ///< runnable cells, in plan order
  std::vector<json> skipped;   ///< cell-skipped deviations of the other cells
  /// The measuring process's own scratch space (report run.scratch); nullopt in this process.
  std::optional<report_scratch> scratch;
};

/// The device side of a run: plan() once, then measure() once.
class measuring_side {
public:
  virtual ~measuring_side() = default;
  /// Probes the device and plans every cell of the protocol; throws the probe's error (exit 5).
  [[nodiscard]] virtual measuring_plan plan() = 0;
  /// Offers a copy ceiling measured earlier (a verified cache entry: run/ceiling_cache.hpp) for
  /// measure() to take where the instrument's copy size and flush match; before measure().
  virtual void offer_ceiling(json entry) = 0;
  /// Measures the planned cells; progress events arrive on `progress`.
  [[nodiscard]] virtual raw_run measure(progress_sink &progress) = 0;
  /// The watchdog's record for the report (run.watchdog), or nullopt where no watchdog
  /// watched (the measuring side in this process).
  [[nodiscard]] virtual std::optional<report_watchdog> watchdog() const { return std::nullopt; }
};

/// The measuring side for `options` (its make_device, resolve_arm, hooks, device_ordinal):
/// in this process, or with `options.isolate` in a child forked now, before the caller loads
/// its key. `seed` is the plan seed.
[[nodiscard]] std::unique_ptr<measuring_side>
start_measuring(const run_options &options, const protocol &proto, std::uint64_t seed);

} // namespace prereg
