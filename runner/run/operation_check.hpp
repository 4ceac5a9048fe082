// Loading a protocol's operation file before anything is stored or measured (`check`, `canon`,
// `freeze`, `try`; docs/operations.md): its declaration read in a sandboxed child process that
// holds no key, validated and registered in this one.
#pragma once

#include "model/report_model.hpp"
#include "run/arm_check.hpp"
#include "spec/operation.hpp"
#include "spec/protocol.hpp"

#include <filesystem>

namespace prereg {

/// What load_operation_here read: the registered operation, and the walls the process that
/// imported the file stood in.
struct operation_load {
  const operation_desc &op;
  report_isolation isolation;
};

/// Reads the declaration of `p`'s operation file (resolved against `protocol_dir`) in a forked
/// child without the key, sandboxed as the measuring process is (the walls protecting `walls`),
/// validates it and registers it for this process. Throws exit 2 for a missing file, a file
/// that does not import or a malformed declaration (one line naming the operation), exit 5 when
/// a module the file imports is not installed here.
[[nodiscard]] operation_load load_operation_here(const protocol &p,
                                                 const std::filesystem::path &protocol_dir,
                                                 const loading_paths &walls);

} // namespace prereg
