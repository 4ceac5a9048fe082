// The arm registry: every kernel's metadata as data, with source hashes from the build.
#include "prereg/registry.hpp"

#include "prereg/arm_sources.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace prereg {
namespace {

struct arm_meta {
  const char *device;
  const char *name;
  const char *op;
  std::vector<dtype> dtypes;
  bool has_backward;
  bool allocates_fwd;
  bool allocates_bwd;
  std::int64_t max_cols;
  std::int64_t cols_multiple;
};

const std::vector<dtype> all_dtypes{dtype::fp32, dtype::fp16, dtype::bf16};
const std::vector<dtype> fp32_only{dtype::fp32};

// The data. Source files and their hashes come from cmake/arms.cmake.
const std::vector<arm_meta> &metadata() {
  static const std::vector<arm_meta> table{
      // CPU arms (kernels/cpu): fp32 only.
      {"cpu", "layernorm.unfused", "layernorm", fp32_only, true, true, true, 1 << 16, 1},
      {"cpu", "layernorm.fused", "layernorm", fp32_only, true, false, true, 1 << 16, 1},
      {"cpu", "rmsnorm.unfused", "rmsnorm", fp32_only, true, true, true, 1 << 16, 1},
      {"cpu", "rmsnorm.fused", "rmsnorm", fp32_only, true, false, true, 1 << 16, 1},
      // CUDA arms (kernels/cuda): row held in registers, 16-byte vectors -> cols % 8.
      {"cuda", "layernorm.unfused", "layernorm", all_dtypes, true, true, true, 8192, 8},
      {"cuda", "layernorm.fused", "layernorm", all_dtypes, true, false, true, 8192, 8},
      {"cuda", "layernorm.lockgroup", "layernorm", all_dtypes, true, false, true, 8192, 8},
      {"cuda", "rmsnorm.unfused", "rmsnorm", all_dtypes, true, true, true, 8192, 8},
      {"cuda", "rmsnorm.fused", "rmsnorm", all_dtypes, true, false, true, 8192, 8},
  };
  return table;
}

std::vector<arm_info> build_registry() {
  std::vector<arm_info> arms;
  for (const auto &m : metadata()) {
    arm_info a{m.name, m.device, m.op, m.dtypes, m.has_backward, "", {}, m.allocates_fwd,
               m.allocates_bwd, m.max_cols, m.cols_multiple, {pass_kind::fwd}, {}};
    if (m.has_backward)
      a.passes.push_back(pass_kind::fwd_bwd);
    for (const auto *s = generated::arm_sources; s->name != nullptr; ++s) {
      if (a.device == s->device && a.name == s->name) {
        a.source_sha256 = s->sha256;
        std::istringstream files(s->files);
        for (std::string f; files >> f;) a.sources.push_back(f);
      }
    }
    arms.push_back(std::move(a)); // registry_test checks every arm has a source hash

  }
  return arms;
}

} // namespace

std::span<const arm_info> all_arms() {
  static const std::vector<arm_info> arms = build_registry();
  return arms;
}

const arm_info *find_arm(std::string_view device, std::string_view name) {
  for (const auto &a : all_arms())
    if (a.device == device && a.name == name) return &a;
  return nullptr;
}

std::optional<std::string> cannot_run(const arm_info &arm, pass_kind pass, std::int64_t rows,
                                      std::int64_t cols, dtype type) {
  if (pass == pass_kind::fwd_bwd && !arm.has_backward)
    return fmt::format("{} has no backward pass", arm.name);
  if (std::find(arm.dtypes.begin(), arm.dtypes.end(), type) == arm.dtypes.end())
    return fmt::format("{} ({}) does not support dtype {}", arm.name, arm.device, to_string(type));
  if (rows < 1) return fmt::format("rows must be at least 1, got {}", rows);
  if (cols < 1 || cols > arm.max_cols)
    return fmt::format("{} ({}) takes cols from 1 to {}, got {}", arm.name, arm.device,
                       arm.max_cols, cols);
  if (cols % arm.cols_multiple != 0)
    return fmt::format("{} ({}) needs cols to be a multiple of {}, got {}", arm.name, arm.device,
                       arm.cols_multiple, cols);
  return std::nullopt;
}

} // namespace prereg
