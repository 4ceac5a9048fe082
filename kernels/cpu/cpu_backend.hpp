// The CPU backend with its test hooks (make_cpu_backend() in backend.hpp uses the defaults).
#pragma once

#include "prereg/arm.hpp"
#include "prereg/backend.hpp"
#include "prereg/protocol.hpp"

#include <functional>
#include <memory>

namespace prereg {

/// Hooks of the CPU backend; the defaults are what `prereg run` uses.
struct cpu_backend_options {
  /// The entry points of a protocol arm; empty: cpu_arm_ops(arm.kernel).
  std::function<const arm_ops *(const arm_spec &arm)> resolve;
  /// Called before each timed sample (outside its window, before the flush) with its cell.
  std::function<void(const cell_key &cell)> on_sample;
};

/// The CPU backend with `options` (tests plant arms and watch the sample order through it).
[[nodiscard]] std::unique_ptr<backend> make_cpu_backend(cpu_backend_options options);

} // namespace prereg
