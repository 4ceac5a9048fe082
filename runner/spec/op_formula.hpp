// The formulas of an operation file's bytes and FLOPs per pass (docs/operations.md, "Formulas"):
// integers, the operation's axis names and `s`, with + - * / and parentheses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace prereg {

/// The values a formula reads: each axis' extent by name, `s` (bytes per element of the
/// protocol's dtype) and `s_NAME` (bytes per element of tensor NAME; an axis of that name wins).
struct formula_env {
  const std::vector<std::string> *axes = nullptr;
  const std::vector<std::int64_t> *extents = nullptr; ///< null: check only (every name is 1)
  std::int64_t s = 1;
  /// Tensor names and their element bytes (`s_NAME`); null: no tensor symbols.
  const std::vector<std::pair<std::string, std::int64_t>> *tensor_sizes = nullptr;
  /// An integer range's bound (docs/operations.md, "Element types"): a unary minus is allowed
  /// and the value may be negative.
  bool signed_bound = false;
};

/// Evaluates `text` over `env`. Throws invalid_input "WHAT: ..." on a syntax error, a name that
/// is neither an axis nor `s` nor `s_NAME` of a tensor, a division that is not exact or by zero,
/// a negative result, or a value past 2^63 - 1.
[[nodiscard]] std::uint64_t eval_formula(std::string_view text, const formula_env &env,
                                         std::string_view what);

/// Why a pass's declared read_bytes / write_bytes (either may be empty) do not split its
/// `bytes` under `env` (checked with every name 1: a necessary condition of splitting it at every
/// cell), or "": they need `bytes`, each fits in it, and both add up to it. `where` begins the
/// message ("passes.fwd").
[[nodiscard]] std::string traffic_split_fault(const std::string &bytes,
                                              const std::string &read_bytes,
                                              const std::string &write_bytes,
                                              const formula_env &env, const std::string &where);

/// Evaluates an integer range's bound: a formula as above that may also have a unary minus
/// (`-5`, `-vocab`, `0 - rows`) and a negative value.
[[nodiscard]] std::int64_t eval_bound(std::string_view text, const formula_env &env,
                                      std::string_view what);

} // namespace prereg
