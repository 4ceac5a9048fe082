// Chooses the backend for a protocol's device: the seam between the core and the hardware.
#include "prereg/backend.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

namespace prereg {

std::unique_ptr<backend> make_default_backend(const std::string &device, int ordinal) {
  if (device == "cuda") return make_cuda_backend(ordinal);
  if (device == "cpu") return make_cpu_backend();
  throw invalid_input(fmt::format("unknown device '{}'", device));
}

} // namespace prereg
