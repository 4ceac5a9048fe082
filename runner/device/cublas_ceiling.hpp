// The CUDA device's compute ceilings (docs/cuda.md, "The roofs"): a dense GEMM through
// cuBLASLt, loaded with dlopen (libcublasLt.so.13) so that a machine without it runs on with the
// ceiling recorded as unknown.
#pragma once

#include "device/device.hpp"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <string_view>

namespace prereg::cuda {

/// The GEMM ceiling's step for element type `type` (bf16, fp16: 8192^3 with fp32 accumulation;
/// fp32: 4096^3 in fp32, no TF32), its operands cudaMalloc'd and drawn U(-1, 1) on `stream`;
/// nullptr with `why_not` set when cuBLASLt is missing, the type has no GEMM here, or cuBLASLt
/// offers no algorithm. Its run() queues one cublasLtMatmul on `stream`.
[[nodiscard]] std::unique_ptr<compute_step>
make_gemm_ceiling(std::string_view type, cudaStream_t stream, std::string &why_not);

} // namespace prereg::cuda
