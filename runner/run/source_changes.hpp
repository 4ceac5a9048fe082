// What changed in a Python arm file since it was frozen (docs/store.md, "Before a run"): the
// two versions' syntax trees compared by Python's `ast` in a child process without the key.
#pragma once

#include "base/json.hpp"

#include <filesystem>

namespace prereg {

/// The store's source_change_reader (store/store.hpp): {"changed", "added", "removed",
/// "module"} of the top-level functions and classes of `now` against `frozen`, or null when
/// no Python is usable here or either file does not parse. Runs the embedded interpreter in a
/// forked child (PREREG_KEY unset); neither file is imported or run, only parsed.
[[nodiscard]] json python_source_changes(const std::filesystem::path &frozen,
                                         const std::filesystem::path &now);

} // namespace prereg
