// Strict YAML: a small document tree built from yaml-cpp's event API that refuses every YAML
// feature a protocol must not use (aliases, tags, merge keys, duplicate keys, ...).
#pragma once

#include "base/json.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace prereg::strict_yaml {

/// Limits against hostile files (documented in docs/protocol.md).
inline constexpr std::size_t max_file_bytes = 1 << 20; ///< 1 MiB
inline constexpr std::size_t max_depth = 64;           ///< nested collections
inline constexpr std::size_t max_list_items = 1024;    ///< items of one sequence
inline constexpr std::size_t max_map_entries = 256;    ///< entries of one mapping
inline constexpr std::size_t max_nodes = 65536;        ///< nodes of one document

/// How a scalar was written: plain (may be a number or boolean), quoted or a block scalar
/// (always a string).
enum class scalar_style { plain, quoted, block };

/// One node of a document: null, a scalar, a sequence or a mapping with scalar keys.
struct node {
  enum class kind { null, scalar, sequence, mapping };
  kind k = kind::null;
  std::string where; ///< `file:line:column` (1-based) or `where#/json/pointer`
  std::string value; ///< scalar text (kind::scalar)
  scalar_style style = scalar_style::plain;
  std::vector<node> items;                    ///< kind::sequence
  std::vector<std::pair<node, node>> entries; ///< kind::mapping: (scalar key, value), unique keys

  /// The value under `key` of a mapping, or null if absent.
  [[nodiscard]] const node *find(std::string_view key) const;

  node() = default;
  node(const node &) = default;
  node(node &&) = default;
  node &operator=(const node &) = default;
  node &operator=(node &&) = default;
  /// Defined out of line: clang cannot instantiate it inline while std::pair<node, node> is
  /// still incomplete (it otherwise fails to compile every user of this header).
  ~node();
};

/// A short name of a node's kind for messages: "null", "a string", "a list", ...
[[nodiscard]] std::string describe(const node &n);

/// Parses exactly one YAML document strictly. Refuses (exit 2, `file:line:column`): a file
/// over 1 MiB or not UTF-8 or with control characters, nesting deeper than 64, more than one
/// document, anchors and aliases, explicit tags, the merge key `<<`, duplicate or non-scalar
/// keys, and yaml-cpp syntax errors. CRLF line endings read as LF; a leading BOM is ignored.
[[nodiscard]] node parse(std::string_view text, const std::string &file);

/// The same tree for a JSON value: strings are quoted scalars, numbers and booleans plain
/// scalars (a float always shows a `.` or exponent), `where` of each node is
/// `where#/json/pointer`.
[[nodiscard]] node from_json(const json &value, const std::string &where);

} // namespace prereg::strict_yaml
