// `prereg run`: integrity check, plan, measure on a device through the engine, analyse, write and
// sign the report, and keep the ledger honest about every run that starts.
#pragma once

#include "device/device.hpp"
#include "engine/measure.hpp"
#include "spec/arm_code.hpp"
#include "spec/operation.hpp"
#include "spec/records.hpp"
#include "spec/shard.hpp"
#include "store/store.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace prereg {

struct run_options {
  std::string target;               ///< HASH | PREFIX | FILE.yaml
  std::filesystem::path store_root; ///< resolved store folder
  std::filesystem::path key_path;   ///< resolved signing key
  std::filesystem::path out_dir;    ///< reports root (default ./reports)
  int device_ordinal = 0;
  bool quiet = false;
  /// `--shard K/N`: measure only the cells of shard K (shard.hpp) and mark the report partial.
  std::optional<shard_spec> shard;
  /// Measure in a forked child that never holds the signing key (docs/engine.md, "The
  /// measuring process"); the CLI sets it, unit tests leave it off.
  bool isolate = false;
  /// Makes the device for a protocol's `device` ("cpu" | "cuda"): make_default_device in the
  /// CLI, a fake in tests.
  std::function<std::unique_ptr<device>(const std::string &kind, int ordinal)> make_device;
  /// The code of an arm: builtin_arm_code in the CLI, planted arms in tests.
  arm_resolver resolve_arm;
  /// Loads an outside arm (plugin, python) in the measuring process; set by run_protocol and
  /// try_protocol from the frozen (or tried) protocol's files.
  std::function<std::shared_ptr<outside_arm>(const arm_spec &)> load_outside;
  /// The engine's test hooks.
  engine_hooks hooks;
  /// `--instrument-from DIR` (docs/grading.md): a grading's submission process takes its launch
  /// floor and copy ceiling from the report in DIR, its grading's baseline; refused for any
  /// protocol but a grading's submission or reward protocol of the same task.
  std::filesystem::path instrument_from;
};

/// Runs the protocol; returns the report folder. Refusals throw `error` with the contract's
/// exit code before any device is touched; a failure or interrupt after the run started
/// appends a run-aborted ledger entry and leaves no report folder.
std::filesystem::path run_protocol(const run_options &options);

/// `prereg try`: runs the protocol FILE in `options.target` as it is, unfrozen, with the same
/// engine, and writes an EXPLORATORY report (report.json marked `exploratory`, report.md,
/// report.html; no signature, no ledger entry) under out_dir/<id>/EXPLORATORY-<stamp>-<hash12>.
std::filesystem::path try_protocol(const run_options &options);

/// The plan of `proto` on `dev`: every cell that can run, seeded from `hash`; each cell that
/// cannot is appended to `deviations` as cell-skipped, with the reason.
[[nodiscard]] run_plan plan_run(const protocol &proto, const std::string &hash, device &dev,
                                const operation_desc &op, std::vector<json> &deviations);

/// Records as aborted every run-start in the ledger whose process on this host is gone and
/// that has no completion or abort entry (e.g. after SIGKILL). Returns how many.
std::size_t reap_vanished_runs(const store &s, const signing_key &key);

} // namespace prereg
