// Maps the CPU arms' kernel names to their entry points.
#include "cpu/cpu_arms.hpp"

#include "cpu/norm_common.hpp"

namespace prereg {

const arm_ops *cpu_arm_ops(std::string_view kernel_name) {
  if (kernel_name == "layernorm.unfused")
    return &cpu::layernorm_unfused_ops;
  if (kernel_name == "layernorm.fused")
    return &cpu::layernorm_fused_ops;
  if (kernel_name == "rmsnorm.unfused")
    return &cpu::rmsnorm_unfused_ops;
  if (kernel_name == "rmsnorm.fused")
    return &cpu::rmsnorm_fused_ops;
  return nullptr;
}

} // namespace prereg
