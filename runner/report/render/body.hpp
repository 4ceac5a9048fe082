// The protocol body (the normalised protocol) read tolerantly for the pages: a missing member
// renders as a fallback, never throws. The report itself is read through the report model.
#pragma once

#include "base/json.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace prereg::render {

/// The JSON null every missing member reads as.
[[nodiscard]] const json &null_json();

/// `obj`[key], or null where `obj` is not an object or lacks `key`.
[[nodiscard]] const json &child(const json &obj, std::string_view key);

/// The protocol body's extents: prereg: 1 `shapes`, prereg: 2 `axes` (both {rows, cols}).
[[nodiscard]] const json &extents(const json &body);

/// `obj`[key] as a finite number, else nullopt.
[[nodiscard]] std::optional<double> number(const json &obj, std::string_view key);

/// `obj`[key] as an integer, else nullopt.
[[nodiscard]] std::optional<std::int64_t> integer(const json &obj, std::string_view key);

/// `obj`[key] as text: a string as it is, null (or missing) as `fallback`, else value_text.
[[nodiscard]] std::string text(const json &obj, std::string_view key, std::string fallback = "");

/// Any JSON value as one line of plain text; objects as `key=value` pairs in key order.
[[nodiscard]] std::string value_text(const json &v);

/// A JSON list as "a, b, c" (strings unquoted); anything else as value_text.
[[nodiscard]] std::string list_text(const json &list);

} // namespace prereg::render
