// The CUDA device's checked calls (device_checks.hpp): the built-in operations' float64
// references, the checked inputs' fill and the comparison, on the device's stream.
#pragma once

#include "device/device_checks.hpp"

#include <cuda_runtime_api.h>

#include <memory>

namespace prereg::cuda {

/// The checks of the CUDA device whose arm stream is `stream`.
[[nodiscard]] std::unique_ptr<device_checks> make_cuda_checks(cudaStream_t stream);

} // namespace prereg::cuda
