// Chooses the device for a protocol's `device`: the seam between the core and the hardware.
#include "device/device.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

namespace prereg {

std::unique_ptr<device> make_default_device(const std::string &kind, int ordinal) {
  if (kind == "cuda")
    return make_cuda_device(ordinal);
  if (kind == "cpu")
    return make_cpu_device();
  throw invalid_input(fmt::format("unknown device '{}'", kind));
}

} // namespace prereg
