// The nesting pre-scan of the strict YAML reader: a cheap over-estimate of a text's nesting
// depth, so that yaml-cpp's recursive parser never sees a hostile file.
#pragma once

#include <cstddef>
#include <string_view>

namespace prereg::strict_yaml::detail {

/// The offset where the estimated nesting depth (block indentation levels plus open flow
/// brackets, outside comments, quoted and block scalars) first exceeds max_depth, or npos.
/// Over-estimates only. `text` has LF line endings.
[[nodiscard]] std::size_t deep_nesting_offset(std::string_view text);

} // namespace prereg::strict_yaml::detail
