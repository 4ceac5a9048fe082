// How the engine calls an arm (invocation.hpp).
#include "engine/invocation.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <tuple>

namespace prereg::engine_detail {
namespace {

/// An outside arm's setup on buffer set `b`.
invocation bind_outside_arm(const operation_desc &op, const buffer_set &b, const cell_key &k,
                            dtype type, pass_kind pass, const bound_arm &arm, device &dev,
                            step_allocator &alloc) {
  invocation v;
  outside_call call;
  call.op = &op;
  call.device = std::string(dev.kind());
  call.device_ordinal = dev.ordinal();
  call.data = b.data();
  std::tie(call.rows, call.cols) = flat_rows_cols(k);
  call.extents = key_shape(op, k);
  call.type = type;
  call.pass = pass;
  call.eps = op.eps;
  call.options = arm.spec->options;
  call.stream = dev.stream();
  call.alloc = &alloc;
  call.region_mark = dev.region_marker();
  v.bound = arm.outside->bind(call);
  return v;
}

} // namespace

invocation make_invocation(const operation_desc &op, const buffer_set &b, const cell_key &k,
                           dtype type, pass_kind pass, const bound_arm &arm, device &dev,
                           step_allocator &alloc) {
  if (arm.outside)
    return bind_outside_arm(op, b, k, type, pass, arm, dev, alloc);
  const auto [rows, cols] = flat_rows_cols(k);
  invocation v;
  v.args.data = b.data();
  v.args.count = b.size();
  v.args.rows = rows;
  v.args.cols = cols;
  v.args.type = type;
  v.args.eps = op.eps;
  v.args.options = arm.options.data();
  v.args.option_count = arm.options.size();
  const auto ptr = [&](std::string_view name) -> void * {
    const int i = op.index_of(name);
    return i < 0 ? nullptr : b.at(static_cast<std::size_t>(i));
  };
  v.norm = norm_tensors{ptr("x"),
                        ptr("gamma"),
                        ptr("beta"),
                        ptr("y"),
                        static_cast<float *>(ptr("mean")),
                        static_cast<float *>(ptr("rstd")),
                        ptr("dy"),
                        ptr("dx"),
                        ptr("dgamma"),
                        ptr("dbeta"),
                        rows,
                        cols,
                        type};
  return v;
}

void run_step(const bound_arm &arm, pass_kind pass, const std::vector<invocation> &sets,
              std::int64_t repeat, step_allocator &alloc, void *stream) {
  for (std::int64_t k = 0; k < repeat; ++k) {
    const invocation &v = sets[static_cast<std::size_t>(k)];
    if (v.bound) {
      v.bound->step(stream); // the whole pass
    } else if (arm.code.norm != nullptr) {
      arm.code.norm->forward(v.norm, alloc, stream);
      if (pass == pass_kind::fwd_bwd)
        arm.code.norm->backward(v.norm, alloc, stream);
    } else {
      arm.code.entry->forward(v.args, alloc, stream);
      if (pass == pass_kind::fwd_bwd)
        arm.code.entry->backward(v.args, alloc, stream);
    }
  }
}

void check_released(tracked_allocator &alloc) {
  if (alloc.current() != 0)
    throw io_error(fmt::format("the arm still holds {} bytes of its step allocations after its "
                               "step (it must release all of them)",
                               alloc.current()));
}

} // namespace prereg::engine_detail
