// Loading a protocol's operation file before anything is stored or measured (`check`, `canon`,
// `freeze`, `try`; docs/operations.md): its declaration read in a child process that holds no
// key, validated and registered in this one.
#pragma once

#include "spec/operation.hpp"
#include "spec/protocol.hpp"

#include <filesystem>

namespace prereg {

/// Reads the declaration of `p`'s operation file (resolved against `protocol_dir`) in a forked
/// child without the key, validates it and registers it for this process. Throws exit 2 for a
/// missing file, a file that does not import or a malformed declaration (one line naming the
/// operation), exit 5 when a module the file imports is not installed here.
const operation_desc &load_operation_here(const protocol &p,
                                          const std::filesystem::path &protocol_dir);

} // namespace prereg
