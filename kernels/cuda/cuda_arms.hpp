// The CUDA arms by kernel name (host-only: includes no CUDA header).
#pragma once

#include "prereg/arm.hpp"

#include <string_view>

namespace prereg {

/// The entry points of the CUDA arm `name` (e.g. "layernorm.fused"), or null if none.
[[nodiscard]] const arm_ops *cuda_arm_ops(std::string_view name);

} // namespace prereg
