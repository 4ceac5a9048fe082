// The walls around the measuring process (docs/engine.md, "The measuring process"): Linux user,
// mount and PID namespaces in which the file system is read-only except a few scratch folders,
// the signing key and its folder are masked, the store and the reports folder are read-only,
// and a fresh /proc shows only the measuring process's own tree. Internal to runner/run.
#pragma once

#include "base/json.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace prereg::detail {

/// What the sandbox hides and protects.
struct sandbox_paths {
  std::filesystem::path key; ///< the signing key file: masked
  /// The store, the reports folder, the project: read-only. A scratch folder inside one of them
  /// stays writable unless it is inside one of the first `sealed` (the store and the reports).
  std::vector<std::filesystem::path> read_only;
  std::size_t sealed = 0;
  std::vector<std::filesystem::path> must_stay_shown; ///< folders a masked key folder must not hide
};

/// The walls that stand, in the order they went up, and why any that the design has is missing
/// (empty when all stand). Goes into the report as run.isolation (docs/report.md).
struct isolation_facts {
  std::vector<std::string> layers;
  std::string reason;
  [[nodiscard]] json to_json() const;
};

/// In the forked measuring process, before any outside code runs: closes every inherited
/// descriptor but 0, 1, 2 and `keep`, enters new user and mount namespaces, masks and
/// write-protects `paths`, then enters a new PID namespace: this process stays outside it and
/// only waits, ending as the measuring process ends (the same exit status or signal); the
/// namespace's init (PID 1) mounts a fresh /proc, reaps orphans and forks the measuring
/// process, which returns from this call as PID 2. A wall that cannot
/// go up is left out and said in the facts' reason; the run goes on without it.
[[nodiscard]] isolation_facts enter_sandbox(const sandbox_paths &paths, std::vector<int> keep);

} // namespace prereg::detail
