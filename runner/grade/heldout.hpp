// Held-out shapes and input seed (docs/grading.md, "Held-out shapes"): sealed by `prereg seal`
// into a secret whose salted SHA-256 the task commits to, revealed in the leaderboard.
#pragma once

#include "base/json.hpp"
#include "spec/protocol.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace prereg::grade {

/// The secret a task's `heldout.commitment` is the SHA-256 of (its canonical JSON).
struct heldout_secret {
  /// Extra extents per axis, in the order written: the grading's axes are the task's public
  /// extents followed by these.
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> axes;
  std::string salt; ///< 64 hex digits, drawn from the system's random source
  std::string seed; ///< 16 hex digits: mixed into every grading's inputs
  /// {"prereg_heldout": 1, "axes": {...}, "salt", "seed"}: the exact object that is hashed.
  [[nodiscard]] json to_json() const;
};

/// `n` random bytes from the system (getrandom), as lowercase hex.
[[nodiscard]] std::string random_hex(std::size_t n);

/// Reads a held-out declaration (`axes: {AXIS: [extents...], ...}`, strict YAML) and seals it
/// with a fresh salt and seed.
[[nodiscard]] heldout_secret seal_heldout(std::string_view yaml, const std::string &file);

/// A secret as `prereg seal` wrote it (strict JSON, exactly its members); exit 2 if malformed.
[[nodiscard]] heldout_secret secret_from_json(const json &j, const std::string &where);
[[nodiscard]] heldout_secret read_secret(const std::filesystem::path &file);

/// SHA-256 hex of the secret's canonical JSON: what a task's heldout.commitment must equal.
[[nodiscard]] std::string commitment_of(const heldout_secret &s);

/// The task's axes extended by the secret's (each of the secret's axes must be one of the task's,
/// each extent new): {axis: [public..., held-out...]}. Exit 2 naming the problem.
[[nodiscard]] json grading_axes(const protocol &task, const heldout_secret *secret);

} // namespace prereg::grade
