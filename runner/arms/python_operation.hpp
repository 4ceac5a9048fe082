// Operation files run in the embedded interpreter (docs/operations.md): the declaration read
// out as descriptor JSON, and the float64 reference bound to a registered outside operation.
#pragma once

#include "base/json.hpp"
#include "spec/operation.hpp"

#include <filesystem>
#include <string>

namespace prereg {

/// The declaration `name` of the operation file `file` as descriptor JSON (the reference as its
/// function's name). Throws invalid_input "operation NAME: ..." (exit 2) for a file that does
/// not import or lacks the declaration, environment_error (exit 5) for a module not installed.
[[nodiscard]] json describe_python_operation(const std::filesystem::path &file,
                                             const std::string &name);

/// Gives the registered outside operation `op` its reference: the declaration's `reference`
/// function, called through the glue for `device` ("cpu" | "cuda"). Each reference call checks
/// what it returns and, on the first call of a pass and shape, that a second call agrees bit for
/// bit; a failure throws invalid_input naming the operation and the cell.
void bind_python_reference(const operation_desc &op, const std::string &device);

} // namespace prereg
