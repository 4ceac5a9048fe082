// The kernel clock: CUPTI activity records of every kernel the device runs, loaded with dlopen
// (docs/engine.md, "The kernel clock"). Without a loadable libcupti.so.13 the clock is unknown
// and a run goes on without it.
#pragma once

#include "device/device.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace prereg::cuda {

/// The process's one CUPTI activity session (CUPTI is per process).
class kernel_tracer {
public:
  /// The tracer, loading libcupti on first use ($PREREG_CUPTI, else libcupti.so.13 on the
  /// loader's path, else the toolkit's lib folders under $CUDA_HOME or /usr/local/cuda).
  [[nodiscard]] static kernel_tracer &instance();

  /// Enables (or disables) CONCURRENT_KERNEL activity. Returns the clock's description, or
  /// nullopt with `why_not` when CUPTI cannot serve (not loadable, wrong version, an enable
  /// call failed: e.g. another profiler such as Nsight Compute holds the device).
  [[nodiscard]] std::optional<std::string> enable(bool on, std::string &why_not);
  [[nodiscard]] bool enabled() const { return m_enabled; }

  /// Delivers the records so far (one CUPTI flush) and returns, per complete pair of marks in
  /// time order (a prereg_window_open, then the next prereg_window_close), the kernels that
  /// overlap the time between the open mark's end and the close mark's start. Records up to
  /// the last close mark are discarded.
  [[nodiscard]] std::vector<window_kernels> take_windows();

  /// Records CUPTI reported dropped (its buffers were full).
  [[nodiscard]] std::uint64_t dropped();

  kernel_tracer(const kernel_tracer &) = delete;
  kernel_tracer &operator=(const kernel_tracer &) = delete;

private:
  kernel_tracer() = default;
  bool m_enabled = false;
};

} // namespace prereg::cuda
