// The harness's buffers on the device: one invocation's buffer set, its bytes, its poison.
#pragma once

#include "device/device.hpp"
#include "spec/operation.hpp"

#include <cstdint>
#include <vector>

namespace prereg::engine_detail {

/// Buffer-set blocks an arm's consecutive windows alternate between (docs/engine.md).
constexpr std::int64_t rotation_blocks = 2;

/// Bytes of one buffer set: every tensor `pass` uses, at its element size.
[[nodiscard]] std::uint64_t set_bytes(const operation_desc &op, dtype type, pass_kind pass,
                                      const shape &s);

/// The element type of tensor `i` at the protocol's `type` (fp32 tensors stay fp32).
[[nodiscard]] dtype element_type(const operation_desc &op, std::size_t i, dtype type);

/// One invocation's buffers on the device (harness memory), in the descriptor's tensor order.
class buffer_set {
public:
  buffer_set(device &dev, const operation_desc &op, const shape &s, dtype type, pass_kind pass);
  buffer_set(const buffer_set &) = delete;
  buffer_set &operator=(const buffer_set &) = delete;
  buffer_set(buffer_set &&o) noexcept : m_dev(o.m_dev), m_ptrs(std::move(o.m_ptrs)) {
    o.m_ptrs.clear();
  }
  buffer_set &operator=(buffer_set &&) = delete;
  ~buffer_set() { free_all(); }
  /// Tensor i's buffer (null where the pass does not use it).
  [[nodiscard]] void *at(std::size_t i) const { return m_ptrs[i]; }
  [[nodiscard]] void *const *data() const { return m_ptrs.data(); }
  [[nodiscard]] std::size_t size() const { return m_ptrs.size(); }

private:
  void free_all() noexcept;
  device &m_dev;
  std::vector<void *> m_ptrs;
};

/// Fills every output and saved tensor `pass` writes in `set` with the poison, on the device
/// (device::fill_poison: a kernel on CUDA, queued on the stream; no host buffer of its size).
void poison_outputs(device &dev, const operation_desc &op, dtype type, pass_kind pass,
                    const shape &s, const buffer_set &set);

} // namespace prereg::engine_detail
