// TEMPORARY stand-in (the lead replaces this file): the three operations' names, axes and
// passes, so that the protocol layer builds and is tested before the descriptors land.
#include "prereg/operation.hpp"

#include <stdexcept>
#include <string>

namespace prereg {
namespace {

operation_desc named(const char *name) {
  operation_desc op;
  op.name = name;
  op.axes = {"rows", "cols"};
  op.passes = {pass_kind::fwd, pass_kind::fwd_bwd};
  return op;
}

const std::vector<operation_desc> &table() {
  static const std::vector<operation_desc> ops{named("layernorm"), named("rmsnorm"),
                                               named("softmax")};
  return ops;
}

} // namespace

std::span<const operation_desc> all_operations() { return table(); }

const operation_desc *find_operation(std::string_view name) {
  for (const auto &op : table())
    if (op.name == name)
      return &op;
  return nullptr;
}

const operation_desc &operation_named(std::string_view name) {
  if (const operation_desc *op = find_operation(name))
    return *op;
  throw std::logic_error("unknown operation " + std::string(name));
}

} // namespace prereg
