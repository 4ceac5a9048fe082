// The JSON that crosses the measuring process's pipe: the raw facts to and from JSON, and the
// strict reading of everything the child sends (a fault: "the measuring process sent an
// invalid result: <path> <problem>", exit 1).
#pragma once

#include "base/json.hpp"
#include "base/json_reader.hpp"
#include "spec/records.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// The raw facts as JSON (NaN as null) and back; raw_from_json validates every member's type
/// and that every cell and correctness record is one of `cells`, at most once. Throws `error`
/// (exit 1) naming the member.
[[nodiscard]] json raw_to_json(const raw_run &raw);
[[nodiscard]] raw_run raw_from_json(const json &j, const std::vector<cell_key> &cells);

namespace detail {

/// The fault of the child's messages: throws io_error("the measuring process sent an invalid
/// result: <path> <problem>").
[[nodiscard]] const json_fault &child_result_fault();
/// The value `j` of a child's message at `path`, read through child_result_fault().
[[nodiscard]] json_node child_node(const json &j, std::string path);
/// Throws child_result_fault()'s error for `path`.
[[noreturn]] void bad_result(const std::string &path, std::string_view problem);
/// A JSON integer that is not negative (a float is not one): "is not a non-negative integer".
[[nodiscard]] std::uint64_t strict_count(const json_node &n);

} // namespace detail
} // namespace prereg
