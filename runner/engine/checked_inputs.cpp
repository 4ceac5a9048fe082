// Checked calls on the device (checked_inputs.hpp).
#include "engine/checked_inputs.hpp"

#include "base/rng.hpp"

namespace prereg::engine_detail {

device_checks *device_checks_for(const run_context &ctx) {
  device_checks *checks = ctx.dev.checks();
  if (checks == nullptr)
    return nullptr;
  return checks->knows(ctx.op, ctx.proto.type) || ctx.op.device_reference != nullptr ? checks
                                                                                     : nullptr;
}

std::unique_ptr<device_reference> reference_on_device(run_context &ctx, device_checks &checks,
                                                      const shape &s, pass_kind pass,
                                                      const std::vector<void *> &tensors) {
  const operation_desc &op = ctx.op;
  const dtype type = ctx.proto.type;
  if (checks.knows(op, type))
    return checks.reference(op, s, pass, type, tensors);
  if (op.device_reference == nullptr)
    return nullptr;
  // The reference reads the inputs where they lie (written on this device's stream: finished
  // first), in their element types; nothing goes through the host.
  std::vector<device_input> in(op.tensors.size());
  for (std::size_t i = 0; i < op.tensors.size(); ++i)
    if (op.tensors[i].role == tensor_role::input && op.used_in(i, pass))
      in[i] = {tensors.at(i), element_type(op, i, type)};
  ctx.dev.synchronize();
  device_values values;
  try {
    values = op.device_reference(op, s, pass, in, ctx.dev.ordinal());
  } catch (const std::exception &) {
    throw reference_failure(std::current_exception());
  }
  if (values.at.empty()) // the operation's device reference cannot serve here: the host's
    return nullptr;
  return checks.adopt(op, s, std::move(values));
}

std::uint64_t seed_of_tensor(std::uint64_t seed, std::size_t t) {
  return rng(seed ^ (0xd1b54a32d192ed03ULL * (t + 1))).next();
}

void fill_checked_inputs(device_checks &checks, const operation_desc &op, const shape &s,
                         dtype type, pass_kind pass, std::uint64_t seed,
                         const std::vector<void *> &targets) {
  for (std::size_t t = 0; t < op.tensors.size(); ++t) {
    const tensor_desc &d = op.tensors[t];
    if (d.role != tensor_role::input || !op.used_in(t, pass))
      continue;
    const std::uint64_t n = op.elements(t, s);
    std::int64_t row_len = 0;
    if (d.dist.row_offset != 0 && d.dims.size() >= 2) {
      const std::int64_t rows = s.extents.at(static_cast<std::size_t>(op.axis_of(d.dims[0])));
      row_len = static_cast<std::int64_t>(n / static_cast<std::uint64_t>(rows));
    }
    checks.fill_input(targets.at(t), static_cast<std::size_t>(n), element_type(op, t, type),
                      op.dist_at(t, s), row_len, seed_of_tensor(seed, t));
  }
}

input_copy::input_copy(device &dev, const operation_desc &op, const shape &s, dtype type,
                       pass_kind pass)
    : m_dev(dev), m_ptrs(op.tensors.size(), nullptr) {
  try {
    for (std::size_t t = 0; t < op.tensors.size(); ++t)
      if (op.tensors[t].role == tensor_role::input && op.used_in(t, pass))
        m_ptrs[t] =
            dev.allocate(static_cast<std::size_t>(op.elements(t, s)) * op.element_size(t, type));
  } catch (...) {
    for (void *p : m_ptrs)
      if (p != nullptr)
        dev.release(p);
    throw;
  }
}

input_copy::~input_copy() {
  for (void *p : m_ptrs)
    if (p != nullptr)
      m_dev.release(p);
}

} // namespace prereg::engine_detail
