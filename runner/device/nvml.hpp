// What NVML (libnvidia-ml.so.1, loaded with dlopen; no nvml.h needed) says about a device.
#pragma once

#include "base/json.hpp"

#include <string>

namespace prereg::cuda {

/// NVML's view of one device; every field says "unknown" where the library or a call is missing.
struct nvml_report {
  std::string driver_version = "unknown"; ///< e.g. "580.159.04"
  json other_processes = "unknown"; ///< [{pid, used_bytes}] without this process, or "unknown"
  std::string status;               ///< "ok" or why NVML could not answer
};

/// Asks NVML about the device at `pci_bus_id` (falls back to index `ordinal`).
[[nodiscard]] nvml_report query_nvml(const std::string &pci_bus_id, int ordinal);

} // namespace prereg::cuda
