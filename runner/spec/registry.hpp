// The arm registry: every arm's descriptor (kernels/<device>/<name>.arm, docs/arms.md) as data,
// CUDA arms included even in a CPU-only build. The core names no kernel: the table is generated
// by cmake/arms.cmake from the descriptor files. Registration makes no CUDA call.
#pragma once

#include "prereg/arm.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// An option an arm declares (protocol schema 2 sets it per arm).
struct arm_option_decl {
  std::string name;
  double default_value = 0;
  std::string doc;
};

/// One term of a scratch estimate: coefficient x rows^a x cols^b x sms^c (a, b, c in {0, 1}).
struct scratch_term {
  std::uint64_t coefficient = 0;
  bool rows = false, cols = false, sms = false;
};

/// One registered arm.
struct arm_info {
  std::string name;    ///< e.g. "layernorm.fused"
  std::string device;  ///< "cpu" | "cuda"
  std::string op;      ///< the operation's name (spec/operation.hpp)
  std::string summary; ///< one line from the descriptor
  std::vector<dtype> dtypes;
  std::vector<pass_kind> passes;
  bool has_backward = false; ///< can run the fwd+bwd pass
  std::string abi; ///< "norm" (norm_tensors / arm_ops) | "tensors" (tensor_args / arm_entry)
  std::string source_sha256;        ///< hash of its sources, embedded at build time (docs/arms.md)
  std::vector<std::string> sources; ///< repo-relative source files the hash covers
  std::string descriptor;           ///< repo-relative path of its .arm file
  bool allocates_fwd = false;       ///< allocates inside a fwd step (peak 0 would be a defect)
  bool allocates_bwd = false;       ///< allocates inside the bwd step
  std::vector<scratch_term> scratch_fwd; ///< upper bound of step-allocator bytes, forward
  std::vector<scratch_term> scratch_bwd; ///< the same for the backward
  std::int64_t max_cols = 0;             ///< largest row length it takes
  std::int64_t cols_multiple = 1;        ///< cols must be a multiple of this
  std::vector<arm_option_decl> options;
};

/// Every arm of this build, in a stable order (descriptor path order).
[[nodiscard]] std::span<const arm_info> all_arms();
/// The arm named `name` for `device`, or null.
[[nodiscard]] const arm_info *find_arm(std::string_view device, std::string_view name);
/// Why `arm` cannot run this pass/shape/dtype, or nullopt if it can.
[[nodiscard]] std::optional<std::string>
cannot_run(const arm_info &arm, pass_kind pass, std::int64_t rows, std::int64_t cols, dtype type);
/// Upper bound of what one invocation of `arm` allocates through its step allocator [bytes]:
/// the forward's estimate, or for fwd+bwd the larger of the two (each releases before return).
[[nodiscard]] std::uint64_t scratch_bytes(const arm_info &arm, pass_kind pass, std::int64_t rows,
                                          std::int64_t cols, std::int64_t sms);
/// Parses a scratch estimate ("0", "8*rows + 64*sms*cols"); throws invalid_input naming `what`.
[[nodiscard]] std::vector<scratch_term> parse_scratch(std::string_view text, std::string_view what);

} // namespace prereg
