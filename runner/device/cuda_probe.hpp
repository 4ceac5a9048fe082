// What the CUDA device's probe finds before anything else (docs/cuda.md): the device made
// current, and which of this build's targets the driver picked for it.
#pragma once

#include "base/json.hpp"

namespace prereg::cuda {

/// Which of this build's CUDA targets the driver picked for the current device: SASS built for
/// it (or for a lower minor of its major), or PTX JIT-compiled by the driver (docs/cuda.md).
[[nodiscard]] json cuda_code(int device_arch);

/// Checks device `ordinal` exists and makes it current; returns the device count; throws
/// environment_error (exit 5) if not.
[[nodiscard]] int select_device(int ordinal);

} // namespace prereg::cuda
