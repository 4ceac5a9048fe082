// One run of the engine: the plan's arms bound to their code, and what every phase reads and
// records (the correctness gate, the instrument, the timed samples).
#pragma once

#include "arms/outside_arm.hpp"
#include "base/watch.hpp"
#include "device/device.hpp"
#include "engine/invocation.hpp"
#include "engine/measure.hpp"
#include "spec/operation.hpp"
#include "spec/records.hpp"

#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace prereg::engine_detail {

/// The state of one run shared by its phases.
struct run_context {
  /// Binds every cell's arm: its code from `resolve`, or the outside arm (loaded once per arm);
  /// a cell that cannot run gets its reason in `skip`.
  run_context(device &dev, const run_plan &plan, const arm_resolver &resolve,
              progress_sink &progress, const engine_hooks &hooks);

  device &dev;
  const run_plan &plan;
  const protocol &proto;
  const operation_desc &op;
  progress_sink &progress;
  const engine_hooks &hooks;
  std::vector<bound_arm> arms;                  ///< per plan cell
  std::vector<std::optional<std::string>> skip; ///< per plan cell: why not run
  /// Per plan cell: the watchdog's reason when its arm is excluded (run_plan::excluded), else
  /// null. An excluded cell is neither skipped nor run: it fails with that reason.
  std::vector<const std::string *> excluded;
  std::map<std::string, std::shared_ptr<outside_arm>> loaded; ///< outside arms by arm id
  std::vector<double> first_call_ms; ///< per plan cell: the correctness run's host time
  double idle_drain_ms = std::numeric_limits<double>::quiet_NaN();
  bool state_on = false; ///< the device's state is read after every kept sample
  /// The operation's reference failed (the correctness gate failed the cells it left): its
  /// message and where, for the dry run (docs/engine.md, "The dry run"); unset when it did not.
  std::optional<std::pair<std::string, std::string>> reference_failure;
  raw_run raw;

  /// The (pass, rows, cols) groups of runnable cells, in plan order; cells in arm order.
  [[nodiscard]] std::vector<std::vector<std::size_t>> groups() const;
  /// Ends the run if the device did not survive an arm's failure.
  void survive(const cell_key &k, const std::string &why) const;
  /// Records plan cell i as skipped, with its reason in `skip`.
  void record_skip(std::size_t i);
  /// The watched call (base/watch.hpp) of plan cell i's arm in `phase`.
  [[nodiscard]] watched_call watch(std::size_t i, call_phase phase) const;

private:
  void bind_builtin(std::size_t i, const arm_resolver &resolve);
  void bind_outside(std::size_t i);
};

/// The cell-skipped deviation of cell `k`.
[[nodiscard]] json skip_deviation(const cell_key &k, const std::string &message);

/// An exception's message, with its where() when it has one.
[[nodiscard]] std::string describe(const std::exception &e);

} // namespace prereg::engine_detail
