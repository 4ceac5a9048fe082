// The device's state through NVML (loaded with dlopen; no nvml.h): SM and memory clocks, power,
// temperature and the clocks-event (throttle) reasons, read after each kept sample's window.
#pragma once

#include "spec/records.hpp"

#include <memory>
#include <optional>
#include <string>

namespace prereg {

/// An open NVML session on one device. Every read is a handful of NVML calls on the host.
class nvml_state_reader {
public:
  /// Opens `library` (default: $PREREG_NVML, else libnvidia-ml.so.1), initialises NVML and
  /// finds the device at `pci_bus_id` (else index `ordinal`); nullptr with `why_not` set when
  /// any of that fails.
  [[nodiscard]] static std::unique_ptr<nvml_state_reader> open(const std::string &pci_bus_id,
                                                               int ordinal, std::string &why_not,
                                                               const std::string &library = {});
  ~nvml_state_reader();
  nvml_state_reader(const nvml_state_reader &) = delete;
  nvml_state_reader &operator=(const nvml_state_reader &) = delete;
  /// "NVML DRIVER (LIBRARY)".
  [[nodiscard]] const std::string &describe() const;
  /// One reading now; a call that fails leaves its member NaN / nullopt.
  [[nodiscard]] device_state_sample read() const;

  struct impl;

private:
  explicit nvml_state_reader(std::unique_ptr<impl> p);
  std::unique_ptr<impl> m_impl;
};

} // namespace prereg
