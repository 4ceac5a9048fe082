// How the engine calls an arm: its code bound to one buffer set, and one step of it.
#pragma once

#include "arms/outside_arm.hpp"
#include "device/device.hpp"
#include "engine/buffers.hpp"
#include "spec/arm_code.hpp"
#include "spec/operation.hpp"

#include <memory>
#include <vector>

namespace prereg::engine_detail {

/// The arguments an arm gets for one buffer set, on either seam; an outside arm is bound to
/// the set instead (its setup).
struct invocation {
  tensor_args args;
  norm_tensors norm;
  std::shared_ptr<bound_arm_instance> bound;
};

/// How the engine calls one arm.
struct bound_arm {
  const arm_spec *spec = nullptr;
  const arm_info *info = nullptr;
  arm_code code;
  std::shared_ptr<outside_arm> outside; ///< a plugin or Python arm (code is then empty)
  std::vector<arm_option> options;      ///< every declared option with the protocol's value
};

/// Binds `arm` to buffer set `b`: the pointers for a built-in arm; the setup of an outside arm
/// (throws what the arm's setup threw).
/// `k` gives the shape (its pass is `pass`).
[[nodiscard]] invocation make_invocation(const operation_desc &op, const buffer_set &b,
                                         const cell_key &k, dtype type, pass_kind pass,
                                         const bound_arm &arm, device &dev, step_allocator &alloc);

/// One step: `repeat` invocations (forward, then backward for fwd+bwd), each on its own set.
void run_step(const bound_arm &arm, pass_kind pass, const std::vector<invocation> &sets,
              std::int64_t repeat, step_allocator &alloc, void *stream);

/// Throws when the arm still holds step allocations after its step.
void check_released(tracked_allocator &alloc);

} // namespace prereg::engine_detail
