// The CUDA device's first facts (cuda_probe.hpp): the device made current, the code picked.
#include "device/cuda_probe.hpp"

#include "device/instrument.hpp"
#include "prereg/error.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace prereg::cuda {

json cuda_code(int device_arch) {
  const loaded_code lc = loaded_code_of_kernels();
  std::vector<int> sass;
  std::vector<int> ptx;
  std::string built;
  const std::string list = PREREG_CUDA_ARCHITECTURES; // CMake's list, ','-separated: "80-real,..."
  for (std::size_t start = 0; start <= list.size();) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, end - start);
    start = end + 1;
    if (item.empty())
      continue;
    const int arch = std::atoi(item.c_str());
    const bool is_virtual = item.ends_with("-virtual");
    const bool is_real = item.ends_with("-real");
    if (!is_virtual)
      sass.push_back(arch);
    if (!is_real)
      ptx.push_back(arch);
    built += (built.empty() ? "" : " ") +
             fmt::format("{}_{}", is_virtual ? "compute" : "sm", arch) +
             (!is_virtual && !is_real ? fmt::format(" compute_{}", arch) : "");
  }
  // Each built SASS target comes from the PTX of the same architecture ("90-real": sm_90 from
  // compute_90), so loaded SASS has ptx_version == binary_version; a JIT-compiled binary has
  // the device's architecture and the PTX's older one (also under CUDA_FORCE_PTX_JIT=1).
  const bool from_sass = std::find(sass.begin(), sass.end(), lc.binary_version) != sass.end() &&
                         lc.ptx_version == lc.binary_version;
  json out;
  out["device_arch"] = fmt::format("sm_{}", device_arch);
  out["built"] = built;
  out["binary_version"] = lc.binary_version;
  out["ptx_version"] = lc.ptx_version;
  out["picked"] = from_sass ? fmt::format("SASS sm_{}", lc.binary_version)
                            : fmt::format("PTX compute_{} JIT-compiled by the driver for sm_{}",
                                          lc.ptx_version, lc.binary_version);
  return out;
}

int select_device(int ordinal) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();
    // Without any NVIDIA driver the runtime says "driver version is insufficient": say what
    // it means. cudaDriverGetVersion gives 0 when no driver is loaded.
    int driver = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaGetLastError();
    if (rc == cudaErrorNoDevice)
      throw environment_error("no CUDA device: the NVIDIA driver sees no GPU");
    if (rc == cudaErrorInsufficientDriver && driver == 0)
      throw environment_error("no CUDA device: no NVIDIA driver is loaded on this machine");
    if (rc == cudaErrorInsufficientDriver)
      throw environment_error(fmt::format(
          "no usable CUDA device: the NVIDIA driver supports CUDA {}.{}, this build needs {}.{}",
          driver / 1000, driver % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10));
    throw environment_error(fmt::format("no usable CUDA device: cudaGetDeviceCount failed: "
                                        "{}: {}",
                                        cudaGetErrorName(rc), cudaGetErrorString(rc)));
  }
  if (count == 0)
    throw environment_error("no CUDA device: cudaGetDeviceCount found 0");
  if (ordinal < 0 || ordinal >= count)
    throw environment_error(fmt::format("CUDA device {} does not exist: this machine has {} "
                                        "(ordinals 0..{})",
                                        ordinal, count, count - 1));
  if (const cudaError_t set = cudaSetDevice(ordinal); set != cudaSuccess) {
    (void)cudaGetLastError();
    throw environment_error(fmt::format("CUDA device {} is not usable: cudaSetDevice: {}", ordinal,
                                        cudaGetErrorString(set)));
  }
  return count;
}

} // namespace prereg::cuda
