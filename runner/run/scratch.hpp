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
/// (the kernel refuses an overlay whose lower folder has mounts below it, which the sandbox's
/// user namespace locks) is named in the reason and left for protect_files() to make read-only
/// (scratch_writable). Remembered for scratch_of_this_process().
[[nodiscard]] scratch_facts bound_scratch(std::vector<std::filesystem::path> folders);

/// What bound_scratch() made in this process (empty when it did not run).
[[nodiscard]] const scratch_facts &scratch_of_this_process();

/// Whether scratch folder `folder` is to be writable in the sandbox: true unless bound_scratch()
/// ran and could not cover it (a folder whose writes would reach the real one, unbounded, stays
/// read-only: the sandbox fails closed).
[[nodiscard]] bool scratch_writable(const std::filesystem::path &folder);
/// The folders bound_scratch() could not cover (canonical), to be made read-only.
[[nodiscard]] const std::vector<std::filesystem::path> &uncovered_scratch();
/// Whether every uncovered folder was made read-only (sandbox_mounts.cpp says so).
void seal_uncovered(bool ok);
/// Why outside code must not run in this process, or "": a folder bound_scratch() could not
/// cover is still writable (it could not be made read-only). Every process that runs outside
/// code checks this after enter_sandbox() and sends it as its error instead.
[[nodiscard]] std::string scratch_refusal();

} // namespace prereg::detail
