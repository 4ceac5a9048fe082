// Linked instead of kernels/cuda/ when this build has no CUDA compiler.
#include "device/device.hpp"

#include "prereg/error.hpp"

namespace prereg {

std::unique_ptr<device> make_cuda_device(int /*device_ordinal*/) {
  throw environment_error("this prereg was built without CUDA support (no nvcc at configure "
                          "time, or -DPREREG_CUDA=OFF); a device: cuda protocol cannot run here");
}

} // namespace prereg
