// The bytes model split into reads and writes, and the element type a pass computes in
// (docs/operations.md, "Reads and writes"; docs/analysis.md, "The roofs").
#include "spec/op_formula.hpp"
#include "spec/operation.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <limits>

namespace prereg {
namespace {

std::uint64_t add(std::uint64_t a, std::uint64_t b) {
  if (b > std::numeric_limits<std::uint64_t>::max() - a)
    throw invalid_input("bytes model overflows 64 bits");
  return a + b;
}

std::uint64_t tensor_bytes(const operation_desc &op, std::size_t i, dtype type, const shape &s) {
  const std::uint64_t n = op.elements(i, s);
  const std::uint64_t e = op.element_size(i, type);
  if (e != 0 && n > std::numeric_limits<std::uint64_t>::max() / e)
    throw invalid_input("bytes model overflows 64 bits");
  return n * e;
}

/// The tensor rule's split: the forward reads its inputs and writes its outputs and saved
/// tensors; the backward reads its inputs and what the forward produced (saved statistics, an
/// output it reads back) and writes what it produces itself.
op_traffic tensor_rule(const operation_desc &op, dtype type, pass_kind pass, const shape &s) {
  op_traffic t;
  for (std::size_t i = 0; i < op.tensors.size(); ++i) {
    const tensor_desc &d = op.tensors[i];
    const bool in_bwd = pass == pass_kind::fwd_bwd && d.bwd;
    if (!d.fwd && !in_bwd)
      continue;
    const std::uint64_t b = tensor_bytes(op, i, type, s);
    const bool input = d.role == tensor_role::input;
    if (d.fwd) {
      std::uint64_t &slot = input ? t.read : t.write;
      slot = add(slot, b);
    }
    if (in_bwd) {
      std::uint64_t &slot = input || d.fwd ? t.read : t.write;
      slot = add(slot, b);
    }
  }
  return t;
}

/// Every tensor the pass uses, once: inputs read, outputs and saved tensors written (the
/// minimum traffic of a fused pass, issue 34's definition).
op_traffic once_each(const operation_desc &op, dtype type, pass_kind pass, const shape &s) {
  op_traffic t;
  for (std::size_t i = 0; i < op.tensors.size(); ++i) {
    if (!op.used_in(i, pass))
      continue;
    const std::uint64_t b = tensor_bytes(op, i, type, s);
    if (op.tensors[i].role == tensor_role::input)
      t.read = add(t.read, b);
    else
      t.write = add(t.write, b);
  }
  return t;
}

/// `bytes` in the proportion of `ratio`'s reads and writes (reads rounded down).
op_traffic in_proportion(std::uint64_t bytes, const op_traffic &ratio) {
  const unsigned __int128 whole =
      static_cast<unsigned __int128>(ratio.read) + static_cast<unsigned __int128>(ratio.write);
  if (whole == 0)
    return {bytes, 0};
  const auto read = static_cast<std::uint64_t>(static_cast<unsigned __int128>(bytes) *
                                               static_cast<unsigned __int128>(ratio.read) / whole);
  return {read, bytes - read};
}

/// The declared read_bytes / write_bytes of a pass, checked against its bytes.
op_traffic declared(const operation_desc &op, const op_pass_formulas &f, std::uint64_t bytes,
                    pass_kind pass, const formula_env &env) {
  const auto eval = [&](const std::string &text, const char *what) {
    return eval_formula(
        text, env,
        fmt::format("operation {}: the {} formula of pass {}", op.name, what, to_string(pass)));
  };
  const bool has_read = !f.read_bytes.empty(), has_write = !f.write_bytes.empty();
  const std::uint64_t r = has_read ? eval(f.read_bytes, "read_bytes") : 0;
  const std::uint64_t w = has_write ? eval(f.write_bytes, "write_bytes") : 0;
  const auto refuse = [&](const std::string &why) {
    throw invalid_input(fmt::format("operation {}: pass {}: {}", op.name, to_string(pass), why));
  };
  if (has_read && has_write) {
    if (r > bytes || w != bytes - r)
      refuse(fmt::format("read_bytes {} + write_bytes {} is not its bytes {}", r, w, bytes));
    return {r, w};
  }
  if (has_read) {
    if (r > bytes)
      refuse(fmt::format("read_bytes {} is more than its bytes {}", r, bytes));
    return {r, bytes - r};
  }
  if (w > bytes)
    refuse(fmt::format("write_bytes {} is more than its bytes {}", w, bytes));
  return {bytes - w, w};
}

/// The name of tensor `i`'s element type under protocol dtype `type`.
std::string element_name(const tensor_desc &t, dtype type) {
  return std::string(to_string(t.type(type)));
}

} // namespace

op_traffic operation_desc::traffic_per_invocation(dtype type, pass_kind pass,
                                                  const shape &s) const {
  const std::uint64_t bytes = bytes_per_invocation(type, pass, s);
  const op_pass_formulas *f = formulas_of(pass);
  if (f == nullptr || f->bytes.empty())
    return tensor_rule(*this, type, pass, s); // the same rule as the total: read + write = bytes
  if (!f->read_bytes.empty() || !f->write_bytes.empty()) {
    std::vector<std::pair<std::string, std::int64_t>> sizes; // s_NAME: each tensor's bytes
    for (const auto &t : tensors)
      sizes.emplace_back(t.name, static_cast<std::int64_t>(element_bytes(t.type(type))));
    const formula_env env{&axes, &s.extents, static_cast<std::int64_t>(element_bytes(type)),
                          &sizes};
    return declared(*this, *f, bytes, pass, env);
  }
  const op_traffic rule = tensor_rule(*this, type, pass, s);
  if (rule.read + rule.write == bytes)
    return rule;
  const op_traffic once = once_each(*this, type, pass, s);
  if (once.read + once.write == bytes)
    return once;
  return in_proportion(bytes, once);
}

std::string operation_desc::compute_type(dtype type, pass_kind pass) const {
  std::string best;
  std::size_t best_size = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].role != tensor_role::input || !used_in(i, pass))
      continue;
    const std::size_t size = element_size(i, type);
    if (best.empty() || size < best_size) {
      best = element_name(tensors[i], type);
      best_size = size;
    }
  }
  return best.empty() ? std::string(to_string(type)) : best;
}

} // namespace prereg
