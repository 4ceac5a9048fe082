// The arm registry: data about every kernel this build knows, CUDA ones included even in a
// CPU-only build. Registration makes no CUDA call.
#pragma once

#include "prereg/arm.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// A number an arm takes from the protocol (`arms[].options` in prereg: 2).
struct arm_option_decl {
  std::string name;
  double default_value = 0;
  std::string doc;
};

/// One registered kernel.
struct arm_info {
  std::string name;       ///< e.g. "layernorm.fused"
  std::string device;     ///< "cpu" | "cuda"
  std::string op;         ///< the operation it computes (prereg/operation.hpp), e.g. "layernorm"
  std::vector<dtype> dtypes;
  bool has_backward;      ///< can run the fwd+bwd pass
  std::string source_sha256; ///< hash of its sources, embedded at build time (see README)
  std::vector<std::string> sources; ///< repo-relative source files the hash covers
  bool allocates_fwd;     ///< allocates inside a fwd step (peak 0 would be a defect)
  bool allocates_bwd;     ///< allocates inside the bwd step
  std::int64_t max_cols;  ///< largest row length it takes
  std::int64_t cols_multiple; ///< cols must be a multiple of this
  std::vector<pass_kind> passes;        ///< the passes it runs
  std::vector<arm_option_decl> options; ///< the options it declares, in order
};

/// Every arm of this build, in a stable order.
[[nodiscard]] std::span<const arm_info> all_arms();
/// The arm named `name` for `device`, or null.
[[nodiscard]] const arm_info *find_arm(std::string_view device, std::string_view name);
/// Why `arm` cannot run this pass/shape/dtype, or nullopt if it can.
[[nodiscard]] std::optional<std::string> cannot_run(const arm_info &arm, pass_kind pass,
                                                    std::int64_t rows, std::int64_t cols,
                                                    dtype type);

} // namespace prereg
