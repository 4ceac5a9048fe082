// The entry points each CUDA normalisation arm's .cu file defines (host-only: no CUDA header).
// Kept because the arms' hashed sources include it; the engine finds them through the
// generated bindings (docs/arms.md).
#pragma once

#include "prereg/arm.hpp"

namespace prereg::cuda {

/// layernorm.unfused (kernels/cuda/layernorm_unfused.cu).
extern const arm_ops layernorm_unfused_ops;
/// layernorm.fused (kernels/cuda/layernorm_fused.cu).
extern const arm_ops layernorm_fused_ops;
/// layernorm.lockgroup (kernels/cuda/layernorm_lockgroup.cu).
extern const arm_ops layernorm_lockgroup_ops;
/// rmsnorm.unfused (kernels/cuda/rmsnorm_unfused.cu).
extern const arm_ops rmsnorm_unfused_ops;
/// rmsnorm.fused (kernels/cuda/rmsnorm_fused.cu).
extern const arm_ops rmsnorm_fused_ops;

} // namespace prereg::cuda
