// The table from kernel name to the CUDA arms' entry points.
#include "cuda/cuda_arms.hpp"

#include "cuda/arm_entries.hpp"

namespace prereg {

const arm_ops *cuda_arm_ops(std::string_view name) {
  if (name == "layernorm.unfused")
    return &cuda::layernorm_unfused_ops;
  if (name == "layernorm.fused")
    return &cuda::layernorm_fused_ops;
  if (name == "layernorm.lockgroup")
    return &cuda::layernorm_lockgroup_ops;
  if (name == "rmsnorm.unfused")
    return &cuda::rmsnorm_unfused_ops;
  if (name == "rmsnorm.fused")
    return &cuda::rmsnorm_fused_ops;
  return nullptr;
}

} // namespace prereg
