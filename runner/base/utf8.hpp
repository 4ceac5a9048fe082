// The one UTF-8 validator (Unicode Table 3-7), shared by the JSON parser and serialiser and the
// strict YAML reader.
#pragma once

#include <cstddef>
#include <string_view>

namespace prereg {

/// The length (1..4) of the well-formed UTF-8 sequence starting at `pos` (Unicode Table 3-7:
/// no overlong forms, no surrogates, nothing above U+10FFFF), or 0 if it is ill-formed or
/// truncated. Stores the code point in `cp`. `pos` must be < s.size().
[[nodiscard]] int utf8_sequence(std::string_view s, std::size_t pos, char32_t &cp);

/// Byte offset of the first ill-formed UTF-8 sequence in `text` (its first byte), or npos if
/// all of `text` is well-formed.
[[nodiscard]] std::size_t invalid_utf8_offset(std::string_view text);

} // namespace prereg
