// Operations as data (docs/engine.md): an operation is a descriptor of its tensors, its passes,
// its bytes model and its float64 reference. The engine, the bytes model, the protocol checks
// and the reports read descriptors; none of them names an operation.
#pragma once

#include "prereg/arm.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prereg {

/// What a tensor is to the operation.
enum class tensor_role {
  input,  ///< read by the pass that uses it; random (never zero), refreshed, never written
  output, ///< written by the pass that produces it; poisoned before every checked call
  saved,  ///< written by the forward and read by the backward (e.g. mean, rstd)
};

/// The element type of a tensor: the protocol's dtype, or a type of its own (tensor_desc::fixed:
/// fp32 for statistics; any dtype in an operation file, docs/operations.md "Element types").
enum class element_rule { protocol_dtype, fixed };

/// How a random input is drawn.
enum class dist_kind {
  uniform, ///< floating point: U(lo, hi) rounded to the element type, never zero
  integer, ///< integers (and bool) uniform in [int_lo, int_hi), bounds as formulas over the axes
  index_of ///< integers uniform in [0, extent of index_axis), index_axis a dim of index_tensor
};

/// How a random input is drawn (values are then rounded to the element type). At a shape,
/// dist_at() gives an integer or index_of distribution as numbers: [lo, hi) in lo, hi.
struct input_distribution {
  double lo = -1; ///< U(lo, hi)
  double hi = 1;
  double row_offset = 0; ///< plus U(-row_offset, row_offset) per row (a per-row mean)
  dist_kind kind = dist_kind::uniform;
  std::string int_lo, int_hi;           ///< integer: the bounds as written (formulas)
  std::string index_tensor, index_axis; ///< index_of: the tensor and the axis it indexes
};

/// One tensor of an operation.
struct tensor_desc {
  std::string name; ///< e.g. "x", "gamma", "y", "rstd", "dx"
  tensor_role role = tensor_role::input;
  std::vector<std::string> dims; ///< axis names, outermost first: {"rows","cols"}, {"cols"}
  element_rule element = element_rule::protocol_dtype;
  dtype fixed = dtype::fp32;    ///< the element type when `element` is fixed
  bool fwd = false;             ///< the forward reads (input/saved) or writes (output/saved) it
  bool bwd = false;             ///< the backward reads or writes it
  bool produced_by_bwd = false; ///< an output of the backward (dx, dgamma): exists in fwd+bwd only
  bool checked = false;         ///< the correctness gate compares it with the reference
  input_distribution dist;      ///< inputs only

  /// The element type at protocol dtype `protocol`.
  [[nodiscard]] dtype type(dtype protocol) const {
    return element == element_rule::fixed ? fixed : protocol;
  }
};

/// A shape: the value of each of the operation's axes, in the descriptor's axis order.
struct shape {
  std::vector<std::int64_t> extents;
  friend bool operator==(const shape &, const shape &) = default;
};

/// Host float64 tensors of one invocation, in the descriptor's tensor order (an empty vector
/// for a tensor the pass does not use).
using host_tensors = std::vector<std::vector<double>>;

/// An outside operation's float64 reference left in device memory: per tensor (descriptor
/// order), the device address of its float64 values (outputs and saved tensors the pass writes;
/// null for the others), valid while `owner` lives.
struct device_values {
  std::vector<const double *> at;
  std::shared_ptr<const void> owner;
};

/// One input of a device reference call: its device address and element type (null: a tensor
/// the call does not read).
struct device_input {
  const void *at = nullptr;
  dtype type = dtype::fp32;
};

/// A tolerance of the correctness gate (docs/protocol.md `correctness`).
struct op_tolerance {
  dtype type = dtype::fp32;
  double rtol = 0;
  double atol = 0;
};

/// A pass's declared bytes and FLOPs per invocation, as formulas over the axes and `s`
/// (docs/operations.md, "The operation file"); "" where the operation declares none.
struct op_pass_formulas {
  pass_kind pass = pass_kind::fwd;
  std::string bytes; ///< "" : the tensor rule (every tensor the pass touches, once)
  std::string flops; ///< "" : not declared
  /// The bytes it reads and writes of `bytes` ("" : not declared; one of them alone: the other
  /// is the rest of `bytes`; neither: derived from the tensors, docs/operations.md).
  std::string read_bytes;
  std::string write_bytes;
};

/// The bytes one invocation reads and writes (docs/operations.md, "Reads and writes"); their
/// sum is the bytes model.
struct op_traffic {
  std::uint64_t read = 0;
  std::uint64_t write = 0;
  friend bool operator==(const op_traffic &, const op_traffic &) = default;
};

/// An operation.
struct operation_desc {
  std::string name;              ///< "layernorm", "rmsnorm", "softmax"
  std::string summary;           ///< one line for `prereg arms` and the docs
  std::vector<std::string> axes; ///< {"rows", "cols"}; cells iterate them in this order
  std::vector<tensor_desc> tensors;
  std::vector<pass_kind> passes; ///< the passes it defines
  double eps = 0;                ///< recorded in reports; the reference uses it
  /// The float64 reference: fills every output (and saved) tensor of `pass` from the inputs
  /// in `t` (already rounded to the element type), for `s`.
  void (*reference)(const operation_desc &op, const shape &s, pass_kind pass,
                    host_tensors &t) = nullptr;
  /// An outside operation's reference computed on the device of `ordinal` that leaves its
  /// outputs there (an operation file's torch reference on CUDA), or null: `reference` only.
  /// `inputs` (descriptor order) are the checked call's inputs where they lie on the device, in
  /// their element types (the device is synchronized: they are written); the reference reads
  /// them there, with no copy through the host. Failures throw as `reference`'s do.
  device_values (*device_reference)(const operation_desc &op, const shape &s, pass_kind pass,
                                    const std::vector<device_input> &inputs, int ordinal) = nullptr;
  /// Declared outside prereg (an operation file, spec/operation_file.hpp): where it came from.
  bool outside = false;
  std::string file;                       ///< outside: the operation file, resolved
  std::string reference_name;             ///< outside: the reference function's name
  std::vector<op_pass_formulas> formulas; ///< outside: per pass, in `passes` order
  std::vector<op_tolerance> tolerances;   ///< outside: the default tolerance per dtype

  /// The declared formulas of `pass`, or null.
  [[nodiscard]] const op_pass_formulas *formulas_of(pass_kind pass) const;
  /// FLOPs of one invocation of `pass` at `s` by the declared formula, or nullopt (none).
  [[nodiscard]] std::optional<std::uint64_t> flops_per_invocation(dtype type, pass_kind pass,
                                                                  const shape &s) const;

  /// Index of the tensor named `name`, or -1.
  [[nodiscard]] int index_of(std::string_view tensor) const;
  /// Index of the axis named `axis`, or -1.
  [[nodiscard]] int axis_of(std::string_view axis) const;
  /// The shape with these rows and cols (every operation has both axes; throws logic_error
  /// if this one does not).
  [[nodiscard]] shape shape_of(std::int64_t rows, std::int64_t cols) const;
  /// Elements of tensor `i` at shape `s`.
  [[nodiscard]] std::uint64_t elements(std::size_t i, const shape &s) const;
  /// Bytes of one element of tensor `i` for protocol dtype `type`.
  [[nodiscard]] std::size_t element_size(std::size_t i, dtype type) const;
  /// Input `i`'s distribution at shape `s`: an integer or index_of one with its bounds [lo, hi)
  /// evaluated there; a uniform one as declared. Throws invalid_input when a bound does not
  /// evaluate or the range is empty.
  [[nodiscard]] input_distribution dist_at(std::size_t i, const shape &s) const;
  /// The tolerance of checked tensor `i` (docs/operations.md, "Element types"): exact for an
  /// integer or bool tensor, the operation's declared tolerance for an fp8 one, else
  /// `protocol` (the protocol's `correctness`).
  [[nodiscard]] op_tolerance tolerance_of(std::size_t i, const op_tolerance &protocol,
                                          dtype type) const;
  /// Whether tensor `i` exists in `pass` (backward-only tensors exist in fwd+bwd only).
  [[nodiscard]] bool used_in(std::size_t i, pass_kind pass) const;
  /// The bytes model: every tensor the pass touches, once, at its element size (the forward's
  /// tensors plus, for fwd+bwd, the backward's). Throws invalid_input on 64-bit overflow.
  [[nodiscard]] std::uint64_t bytes_per_invocation(dtype type, pass_kind pass,
                                                   const shape &s) const;
  /// The bytes model split into reads and writes (op_traffic.cpp; docs/operations.md, "Reads and
  /// writes"): read + write == bytes_per_invocation. Throws invalid_input where declared
  /// read_bytes/write_bytes do not add up to the pass's bytes.
  [[nodiscard]] op_traffic traffic_per_invocation(dtype type, pass_kind pass, const shape &s) const;
  /// The element type a pass's arithmetic is judged against (the key of its compute ceiling,
  /// docs/analysis.md, "The roofs"): the narrowest element type of the inputs the pass reads,
  /// the first such input in tensor order on a tie ("bf16", "fp32", ...).
  [[nodiscard]] std::string compute_type(dtype type, pass_kind pass) const;
};

/// Every operation this build knows, in a stable order.
[[nodiscard]] std::span<const operation_desc> all_operations();
/// The operation named `name`, or null.
[[nodiscard]] const operation_desc *find_operation(std::string_view name);
/// The operation named `name`; throws std::logic_error if unknown (validated input only).
[[nodiscard]] const operation_desc &operation_named(std::string_view name);

} // namespace prereg
