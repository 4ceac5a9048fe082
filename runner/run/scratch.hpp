// The measuring process's own bounded scratch space (docs/engine.md, "Scratch"): one tmpfs of a
// fixed size takes every write to the scratch folders, each of which becomes an overlay whose
// lower layer is the folder as it was; the writes vanish with the process's mount namespace.
// Internal to runner/run.
#pragma once

#include "base/json.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace prereg::detail {

/// What the scratch space is: its size [bytes] (0 when it could not be bounded), the folders it
/// covers, and why any folder is not covered ("" when all are). run.scratch in the report.
struct scratch_facts {
  std::uint64_t bytes = 0;
  std::vector<std::string> folders;
  std::string reason;
  [[nodiscard]] json to_json() const;
};

/// The scratch space's size: PREREG_SCRATCH_MB MiB (a whole number from 1 to 1048576), else
/// default_scratch_mb; an invalid value is the default, said in `reason`.
inline constexpr std::uint64_t default_scratch_mb = 1024;
[[nodiscard]] std::uint64_t scratch_limit_bytes(std::string &reason);

/// In a new mount namespace, before any folder is bound or made read-only: a tmpfs of
/// scratch_limit_bytes() mounted on the shallowest of `folders`, and an overlay on each folder
/// (parents first) whose upper layer is in that tmpfs. A folder whose overlay cannot be mounted
/// stays as it was, said in the reason. Remembered for scratch_of_this_process().
[[nodiscard]] scratch_facts bound_scratch(std::vector<std::filesystem::path> folders);

/// What bound_scratch() made in this process (empty when it did not run).
[[nodiscard]] const scratch_facts &scratch_of_this_process();

} // namespace prereg::detail
