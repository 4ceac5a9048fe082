// The dry run (docs/engine.md, "The dry run"): the correctness gate alone over a small plan, so
// that `check` and `freeze` call each arm and the operation's reference once before anything is
// stored; no instrument, no samples.
#pragma once

#include "device/device.hpp"
#include "spec/arm_code.hpp"
#include "spec/records.hpp"

#include <optional>
#include <string>
#include <vector>

namespace prereg {

/// What the dry run found: one correctness record per cell that ran, the cells that could not
/// run here (cell-skipped deviations, with the reason) and the operation's reference's failure.
struct dry_run_outcome {
  std::vector<correctness_record> correctness; ///< in plan order
  std::vector<json> skipped;
  std::optional<std::string> reference_failure; ///< its message
  std::string reference_where;                  ///< the file it names, or ""
};

/// Binds `plan`'s arms on `dev` (code from `resolve`, outside arms from plan.load_outside) and
/// runs the correctness gate over its cells: each arm called once on fresh random inputs with
/// poisoned outputs, its outputs compared with the operation's reference at the protocol's
/// tolerances. The same code as a run's gate (engine/gate.cpp), nothing else.
[[nodiscard]] dry_run_outcome dry_run(device &dev, const run_plan &plan,
                                      const arm_resolver &resolve);

} // namespace prereg
