// The CPU arms by kernel name (the registry holds their metadata; this holds their code).
#pragma once

#include "prereg/arm.hpp"

#include <string_view>

namespace prereg {

/// The entry points of the CPU arm `kernel_name` (e.g. "layernorm.fused"), or null if unknown.
[[nodiscard]] const arm_ops *cpu_arm_ops(std::string_view kernel_name);

} // namespace prereg
