// The device side of a checked call (docs/engine.md, "What is computed where"): the inputs of
// the gate and of the spot checks drawn on the device, their float64 reference computed there
// and the outputs compared there, so that a check costs no host work proportional to its size.
#pragma once

#include "prereg/arm.hpp"
#include "spec/operation.hpp"
#include "spec/reference.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace prereg {

/// One output's comparison on the device: reference::compare's result for it, whether every
/// element still holds the poison, and the output's and the reference's values at
/// result.first_bad (when it failed).
struct device_comparison {
  reference::comparison result;
  bool all_poison = false;
  double got = 0, ref = 0;
};

/// The float64 reference of one checked call, held in device memory.
class device_reference {
public:
  virtual ~device_reference() = default;
  /// Tensor `t` as written at device address `out` (elements of `type`) against its reference,
  /// by reference::compare's rule (tolerance from the largest finite |ref|, NaN never matches, a
  /// constant or all-zero output fails against a varying reference). `t` must be an output or
  /// saved tensor the call's pass writes.
  [[nodiscard]] virtual device_comparison compare(std::size_t t, const void *out, dtype type,
                                                  double rtol, double atol) = 0;
  /// Tensor `t`'s reference read back (tests, and a failure's report).
  [[nodiscard]] virtual std::vector<double> download(std::size_t t) = 0;
};

/// What a device computes of checked calls. A device without one (the CPU, the tests' fake)
/// leaves inputs, reference and comparison to the host (multi-core, spec/reference.cpp).
class device_checks {
public:
  virtual ~device_checks() = default;
  /// Whether reference() knows `op` at protocol dtype `type` (false: the host computes it, or
  /// an operation file's own device reference does, through adopt()).
  [[nodiscard]] virtual bool knows(const operation_desc &op, dtype type) const = 0;
  /// Fills an input tensor of n elements of `type` at device address p for a checked call:
  /// `dist`'s values, never zero, per-row offsets for rows of `row_len` elements (0: none),
  /// reproducible from `seed` (the rule is docs/engine.md's).
  virtual void fill_input(void *p, std::size_t n, dtype type, const input_distribution &dist,
                          std::int64_t row_len, std::uint64_t seed) = 0;
  /// The float64 reference of `op`'s `pass` at `s` from the inputs at `tensors` (device
  /// addresses in the descriptor's tensor order, null where unused), computed on the device;
  /// null when !knows(op, type).
  [[nodiscard]] virtual std::unique_ptr<device_reference>
  reference(const operation_desc &op, const shape &s, pass_kind pass, dtype type,
            std::span<void *const> tensors) = 0;
  /// A reference whose float64 values were computed on this device by someone else (an
  /// operation file's torch reference): `values.at[t]` for tensor t, kept alive by
  /// values.owner while the reference lives; compared exactly as reference()'s.
  [[nodiscard]] virtual std::unique_ptr<device_reference>
  adopt(const operation_desc &op, const shape &s, device_values values) = 0;
  /// The first of n elements of `width` bytes where a and b (device addresses) differ, or -1.
  [[nodiscard]] virtual std::int64_t first_difference(const void *a, const void *b, std::size_t n,
                                                      std::size_t width) = 0;
};

} // namespace prereg
