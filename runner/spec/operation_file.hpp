// Operations declared outside prereg (docs/operations.md, "The operation file"): the
// descriptor's JSON form, its strict validation, and the process's table of outside operations
// that find_operation() consults after the built-in ones.
#pragma once

#include "base/json.hpp"
#include "spec/operation.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace prereg {

struct protocol;

/// The descriptor JSON of `op` (the form an operation file's declaration takes, and the one a
/// freeze record pins): name, summary, axes, tensors, passes (with formulas), eps, tolerance,
/// reference. A built-in operation's reference is "compiled".
[[nodiscard]] json operation_to_json(const operation_desc &op);

/// Validates a descriptor JSON strictly and builds the operation (reference unset, outside set,
/// `file` as given). Throws invalid_input "operation NAME: WHAT" (exit 2) at `where`.
[[nodiscard]] operation_desc operation_from_json(const json &descriptor, const std::string &file,
                                                 const std::string &where);

/// Why the integer inputs of `op` cannot be drawn at shape `s` (a range over the axes that is
/// empty there or leaves its type, indices into an axis longer than the type holds), one line
/// naming the operation and tensor; nullopt when they can.
[[nodiscard]] std::optional<std::string> check_ranges_at(const operation_desc &op, const shape &s);

/// The SHA-256 (hex) of the descriptor's canonical JSON.
[[nodiscard]] std::string operation_digest(const json &descriptor);

/// Registers an outside operation for this process (replacing one of the same name); throws
/// invalid_input when the name is a built-in operation's. Returns the registered descriptor.
const operation_desc &register_outside_operation(operation_desc op);

/// Sets the float64 reference of the registered outside operation `name`.
void set_outside_reference(std::string_view name,
                           void (*reference)(const operation_desc &, const shape &, pass_kind,
                                             host_tensors &));

/// Sets the device reference of the registered outside operation `name` (null: none).
void set_outside_device_reference(std::string_view name,
                                  device_values (*reference)(const operation_desc &, const shape &,
                                                             pass_kind,
                                                             const std::vector<device_input> &,
                                                             int));

/// The registered outside operation `name`, or null.
[[nodiscard]] const operation_desc *find_outside_operation(std::string_view name);

/// A stand-in for an outside operation not (yet) registered in this process: axes rows and
/// cols, both passes, no tensors. The protocol validator uses it for `operation: {python, name}`
/// until `check`/`freeze` have loaded the file (or `run` registered the frozen descriptor).
[[nodiscard]] const operation_desc &outside_placeholder(std::string_view name);

/// The freeze record's `operation` entry for `p`'s operation file: python and name as written,
/// the file kept (project-relative), its SHA-256, the descriptor and the descriptor's digest.
[[nodiscard]] json operation_record(const protocol &p, const operation_desc &op,
                                    const std::string &kept_file, const std::string &sha256);

/// The operation file a freeze record pins, resolved against `project`.
[[nodiscard]] std::filesystem::path recorded_operation_file(const json &freeze_record,
                                                            const std::filesystem::path &project);

/// Registers the operation a freeze record pins (its `operation` entry) and returns it; null
/// when the record has none (a built-in operation). Throws integrity_error (exit 3) for an
/// entry whose descriptor does not hash to its descriptor_sha256.
const operation_desc *register_recorded_operation(const json &freeze_record,
                                                  const std::filesystem::path &project,
                                                  const std::string &where);

} // namespace prereg
