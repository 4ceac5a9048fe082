// Where a checked call's inputs, reference and comparison live (docs/engine.md, "What is
// computed where"): on the device when it knows the operation, else on the host.
#pragma once

#include "engine/buffers.hpp"
#include "engine/context.hpp"

#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

namespace prereg::engine_detail {

/// The reference a checked call's outputs are compared with: host tensors (the descriptor's
/// order) or one on the device; exactly one is set.
struct checked_reference {
  const host_tensors *host = nullptr;
  device_reference *on_device = nullptr;
};

/// The device's checks when they cover this run's operation and dtype (a built-in reference
/// of the device, or an operation file's own device reference), else null (the host's).
[[nodiscard]] device_checks *device_checks_for(const run_context &ctx);

/// The operation's own reference failed on the device path (an operation file's reference
/// raised, returned what its declaration does not, disagreed with itself): `original` is what
/// the host path's call would have thrown, and the host path is not tried.
struct reference_failure : std::exception {
  std::exception_ptr original;
  explicit reference_failure(std::exception_ptr e) : original(std::move(e)) {}
  [[nodiscard]] const char *what() const noexcept override { return "the reference failed"; }
};

/// The float64 reference of a checked call of `pass` at `s` whose inputs are at `tensors`
/// (device addresses, descriptor order), held on the device: the device's own kernels for a
/// built-in operation; for an operation file, its inputs read back (packed, unpacked on every
/// core) and handed to its device reference, whose outputs stay on the device. Null when the
/// device computes neither (or the device reference cannot serve here: no torch with CUDA).
/// Throws reference_failure when the operation's reference fails.
[[nodiscard]] std::unique_ptr<device_reference>
reference_on_device(run_context &ctx, device_checks &checks, const shape &s, pass_kind pass,
                    const std::vector<void *> &tensors);

/// Fills every input tensor `pass` uses at `targets` (device addresses in descriptor order) on
/// the device from `seed`: tensor t from seed_of_tensor(seed, t), the same values in every
/// pass that uses it.
void fill_checked_inputs(device_checks &checks, const operation_desc &op, const shape &s,
                         dtype type, pass_kind pass, std::uint64_t seed,
                         const std::vector<void *> &targets);

/// The seed of input tensor t of a checked call seeded `seed`.
[[nodiscard]] std::uint64_t seed_of_tensor(std::uint64_t seed, std::size_t t);

/// A copy of a checked call's inputs in harness memory (null for other tensors).
class input_copy {
public:
  input_copy(device &dev, const operation_desc &op, const shape &s, dtype type, pass_kind pass);
  input_copy(const input_copy &) = delete;
  input_copy &operator=(const input_copy &) = delete;
  ~input_copy();
  [[nodiscard]] const std::vector<void *> &ptrs() const { return m_ptrs; }
  [[nodiscard]] void *at(std::size_t t) const { return m_ptrs[t]; }

private:
  device &m_dev;
  std::vector<void *> m_ptrs;
};

} // namespace prereg::engine_detail
