// The files an outside arm names (a plugin library, a Python module): where they are and their
// SHA-256, which the freeze record pins (docs/arms.md).
#pragma once

#include <filesystem>
#include <string>

namespace prereg {

/// The file an outside arm names, resolved: `written` relative to the protocol file's folder.
[[nodiscard]] std::filesystem::path outside_file(const std::filesystem::path &protocol_dir,
                                                 const std::string &written);

/// The SHA-256 (hex) of an outside arm's file; throws invalid_input naming the arm.
[[nodiscard]] std::string outside_file_sha256(const std::filesystem::path &file,
                                              const std::string &arm_id);

} // namespace prereg
