// Shards of a plan (docs/scale-out.md, "The shard rule"): a deterministic partition of a
// protocol's cells that keeps together every cell that one prediction compares.
#pragma once

#include "base/json.hpp"
#include "spec/protocol.hpp"
#include "spec/records.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// The cells of a protocol in plan order: arms x passes x rows x cols.
[[nodiscard]] std::vector<cell_key> all_cells(const protocol &p);

/// Shard K of N (1 <= K <= N).
struct shard_spec {
  std::int64_t index = 1; ///< K, 1-based
  std::int64_t count = 1; ///< N
  friend bool operator==(const shard_spec &, const shard_spec &) = default;
};

/// "K/N" -> {K, N}; exit 2 unless 1 <= K <= N <= 10000 (both plain decimal).
[[nodiscard]] shard_spec parse_shard(std::string_view text);
/// "K/N".
[[nodiscard]] std::string to_string(const shard_spec &s);
/// {"index": K, "count": N}, and back (exit 2 naming `where` if malformed).
[[nodiscard]] json to_json(const shard_spec &s);
[[nodiscard]] shard_spec shard_from_json(const json &j, const std::string &where);

/// One group of cells that no shard splits: every arm at one (pass, rows, cols).
struct shape_group {
  pass_kind pass = pass_kind::fwd;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<cell_key> cells; ///< in plan order
  /// Whether cell `c` belongs to the group (its pass and shape, named axes included).
  [[nodiscard]] bool holds(const cell_key &c) const {
    return c.pass == pass && !cells.empty() && cells.front().same_shape(c);
  }
};

/// The shape groups of `p`, in plan order of their first cell (passes, then rows, then cols).
[[nodiscard]] std::vector<shape_group> shape_groups(const protocol &p);

/// The shard (1-based) that group `g` (0-based, shape_groups order) belongs to in N shards:
/// g mod N + 1, round robin (every group holds the same number of cells: one per arm).
[[nodiscard]] std::int64_t shard_of_group(std::size_t g, std::int64_t count);

/// The cells of shard `s`, in plan order; exit 2 if N exceeds the protocol's shape groups
/// (a shard would be empty).
[[nodiscard]] std::vector<cell_key> shard_cells(const protocol &p, const shard_spec &s);

/// The shard of `cell` in N shards (exit 2 if it is not a cell of `p`).
[[nodiscard]] std::int64_t shard_of_cell(const protocol &p, const cell_key &cell,
                                         std::int64_t count);

/// `--devices 0,1,...`: non-negative ordinals, 1 to 64 of them; a repeated ordinal is allowed
/// (its shards run at once, each in its own process, sharing the device).
[[nodiscard]] std::vector<int> parse_device_list(std::string_view text);

} // namespace prereg
