// An arm's code: the entry points the engine calls, resolved by name outside the core
// (kernels/ links the built-in arms' code; tests plant their own).
#pragma once

#include "prereg/arm.hpp"
#include "spec/protocol.hpp"
#include "spec/registry.hpp"

#include <functional>

namespace prereg {

/// Exactly one of the two is set for a runnable arm: a normalisation kernel on the norm_tensors
/// seam (abi "norm"), or an arm on the generic tensor_args seam (abi "tensors").
struct arm_code {
  const arm_ops *norm = nullptr;
  const arm_entry *entry = nullptr;
  [[nodiscard]] bool empty() const { return norm == nullptr && entry == nullptr; }
};

/// Resolves a protocol arm (its spec, and the registry's descriptor of its kernel) to its code
/// (empty: this build has no code for it).
using arm_resolver = std::function<arm_code(const arm_spec &, const arm_info &)>;

/// The built-in arms' code (generated from kernels/*/*.arm; CUDA arms only in a CUDA build).
[[nodiscard]] arm_code builtin_arm_code(const arm_info &arm);

/// The resolver of `prereg run`: every arm is a built-in one.
[[nodiscard]] inline arm_resolver builtin_resolver() {
  return [](const arm_spec &, const arm_info &arm) { return builtin_arm_code(arm); };
}

} // namespace prereg
