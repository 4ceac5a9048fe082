// PREREG_CUDA_CALL / PREREG_CUDA_LAUNCH: every CUDA runtime call and kernel launch goes through
// them; a failure clears the (non-sticky) error state and throws cuda_error naming the call.
#pragma once

#include "prereg/error.hpp"

#include <cuda_runtime_api.h>
#include <string>
#include <utility>

namespace prereg::cuda {

/// A failed CUDA call (exit 1): the call's text, the error's name and message, where it was made.
class cuda_error : public error {
public:
  cuda_error(cudaError_t status, const std::string &what, std::string where)
      : error(exit_code::failure, what, std::move(where)), m_status(status) {}
  /// The CUDA status the call returned.
  [[nodiscard]] cudaError_t status() const noexcept { return m_status; }

private:
  cudaError_t m_status;
};

/// Throws cuda_error unless `status` is cudaSuccess; clears the last-error state first so the
/// next call starts clean (a sticky error stays: the context is then lost, see context_alive).
inline void check(cudaError_t status, const char *call, const char *file, int line) {
  if (status == cudaSuccess)
    return;
  (void)cudaGetLastError();
  std::string where = file;
  if (const auto slash = where.rfind("kernels/"); slash != std::string::npos)
    where = where.substr(slash);
  // No fmt here: nvcc rejects fmt 9's compile-time format strings.
  throw cuda_error(status,
                   std::string(call) + " failed: " + cudaGetErrorName(status) + ": " +
                       cudaGetErrorString(status),
                   where + ":" + std::to_string(line));
}

/// True if the current device's context still works (no sticky error such as an illegal
/// address); consumes and clears a non-sticky pending error.
[[nodiscard]] inline bool context_alive() noexcept {
  (void)cudaGetLastError();
  if (cudaDeviceSynchronize() != cudaSuccess)
    return false;
  return cudaGetLastError() == cudaSuccess;
}

} // namespace prereg::cuda

/// Runs one CUDA runtime call and throws cuda_error (naming the call) if it fails.
#define PREREG_CUDA_CALL(expr) ::prereg::cuda::check((expr), #expr, __FILE__, __LINE__)
/// Launches a kernel (`kernel<<<grid, block, smem, stream>>>(args)`) and checks the launch.
#define PREREG_CUDA_LAUNCH(...)                                                                    \
  do {                                                                                             \
    __VA_ARGS__;                                                                                   \
    ::prereg::cuda::check(cudaGetLastError(), #__VA_ARGS__, __FILE__, __LINE__);                   \
  } while (0)
