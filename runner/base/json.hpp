// RFC 8785 (JCS) canonical JSON: a strict parser and the one serialiser for hashed bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace prereg {

using json = nlohmann::json;

/// Deepest nesting of arrays/objects the parser accepts and the canonicaliser emits.
inline constexpr int max_json_depth = 256;

/// Parses `text` as strict I-JSON: rejects duplicate keys, lone surrogates, invalid UTF-8,
/// NaN/Infinity, numbers outside double range, trailing bytes, nesting deeper than 256.
/// Throws `error` (exit 2) with `file:line:column` of the offending byte.
[[nodiscard]] json parse_json_strict(std::string_view text, const std::string &file);

/// The RFC 8785 canonical bytes of `value`: keys sorted by UTF-16 code units, ECMAScript
/// number formatting (integers are formatted as the double they convert to), minimal string
/// escapes, no whitespace. Throws `error` (exit 2) for NaN/Infinity or invalid UTF-8 strings.
[[nodiscard]] std::string canonical_json(const json &value);

/// ECMAScript Number.prototype.toString of a finite double (shortest round-trip digits).
[[nodiscard]] std::string format_number(double value);

/// A finite number as itself, NaN or an infinity as null (JSON has neither).
[[nodiscard]] json finite_or_null(double v);

} // namespace prereg
