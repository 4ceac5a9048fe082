// The harness's buffers on the device (buffers.hpp).
#include "engine/buffers.hpp"

namespace prereg::engine_detail {

std::uint64_t set_bytes(const operation_desc &op, dtype type, pass_kind pass, const shape &s) {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < op.tensors.size(); ++i)
    if (op.used_in(i, pass))
      total += op.elements(i, s) * op.element_size(i, type);
  return total;
}

dtype element_type(const operation_desc &op, std::size_t i, dtype type) {
  return op.tensors[i].type(type);
}

buffer_set::buffer_set(device &dev, const operation_desc &op, const shape &s, dtype type,
                       pass_kind pass)
    : m_dev(dev), m_ptrs(op.tensors.size(), nullptr) {
  try {
    for (std::size_t i = 0; i < op.tensors.size(); ++i)
      if (op.used_in(i, pass))
        m_ptrs[i] =
            dev.allocate(static_cast<std::size_t>(op.elements(i, s)) * op.element_size(i, type));
  } catch (...) {
    free_all();
    throw;
  }
}

void buffer_set::free_all() noexcept {
  for (auto *&p : m_ptrs)
    if (p != nullptr) {
      m_dev.release(p);
      p = nullptr;
    }
}

void poison_outputs(device &dev, const operation_desc &op, dtype type, pass_kind pass,
                    const shape &s, const buffer_set &set) {
  for (std::size_t t = 0; t < op.tensors.size(); ++t)
    if (op.tensors[t].role != tensor_role::input && op.used_in(t, pass))
      dev.fill_poison(set.at(t), static_cast<std::size_t>(op.elements(t, s)),
                      element_type(op, t, type));
}

} // namespace prereg::engine_detail
