// The operations this build knows, as descriptors (docs/operations.md), and what every
// descriptor derives: element counts and sizes, the bytes model, the float64 reference.
#include "spec/operation.hpp"

#include "base/parallel.hpp"
#include "prereg/error.hpp"
#include "prereg/ops/softmax.hpp"
#include "spec/op_formula.hpp"
#include "spec/operation_file.hpp"
#include "spec/reference.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace prereg {
namespace {

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a)
    throw invalid_input("bytes model overflows 64 bits");
  return a * b;
}

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b) {
  if (b > std::numeric_limits<std::uint64_t>::max() - a)
    throw invalid_input("bytes model overflows 64 bits");
  return a + b;
}

// --- LayerNorm and RMSNorm: the float64 reference in spec/reference.hpp ----------------------

/// Runs reference::compute for a normalisation, moving tensors by name in and out.
void norm_reference(const operation_desc &op, const shape &s, pass_kind pass, host_tensors &t) {
  const bool layernorm = op.name == "layernorm";
  auto at = [&](std::string_view name) -> std::vector<double> & {
    static std::vector<double> none;
    const int i = op.index_of(name);
    return i < 0 ? none : t[static_cast<std::size_t>(i)];
  };
  // The inputs are moved in and back out (a 65536 x 1024 tensor is 512 MiB of doubles).
  reference::inputs64 in;
  in.rows = s.extents.at(0);
  in.cols = s.extents.at(1);
  in.x = std::move(at("x"));
  in.gamma = std::move(at("gamma"));
  if (layernorm)
    in.beta = std::move(at("beta"));
  const bool backward = pass == pass_kind::fwd_bwd;
  if (backward)
    in.dy = std::move(at("dy"));
  reference::outputs64 out =
      reference::compute(layernorm ? operation::layernorm : operation::rmsnorm, in, backward);
  at("x") = std::move(in.x); // the inputs back where they were
  at("gamma") = std::move(in.gamma);
  if (layernorm)
    at("beta") = std::move(in.beta);
  if (backward)
    at("dy") = std::move(in.dy);
  at("y") = std::move(out.y);
  if (layernorm)
    at("mean") = std::move(out.mean);
  at("rstd") = std::move(out.rstd);
  if (backward) {
    at("dx") = std::move(out.dx);
    at("dgamma") = std::move(out.dgamma);
    if (layernorm)
      at("dbeta") = std::move(out.dbeta);
  }
}

// --- softmax --------------------------------------------------------------------------------

void softmax_reference(const operation_desc & /*op*/, const shape &s, pass_kind pass,
                       host_tensors &t) {
  const std::int64_t rows = s.extents.at(0), cols = s.extents.at(1);
  const auto n = static_cast<std::size_t>(rows * cols);
  const std::vector<double> &x = t.at(softmax::x);
  if (rows < 1 || cols < 1 || x.size() != n)
    throw invalid_input(fmt::format("reference: inputs do not match shape {}x{}", rows, cols));
  std::vector<double> &y = t.at(softmax::y);
  y.assign(n, 0.0);
  parallel_chunks(rows, chunk_for(cols), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const double *xr = x.data() + r * cols;
      double *yr = y.data() + r * cols;
      double m = xr[0];
      for (std::int64_t c = 1; c < cols; ++c)
        m = std::max(m, xr[c]);
      double sum = 0;
      for (std::int64_t c = 0; c < cols; ++c) {
        yr[c] = std::exp(xr[c] - m);
        sum += yr[c];
      }
      for (std::int64_t c = 0; c < cols; ++c)
        yr[c] /= sum;
    }
  });
  if (pass != pass_kind::fwd_bwd)
    return;
  const std::vector<double> &dy = t.at(softmax::dy);
  if (dy.size() != n)
    throw invalid_input(fmt::format("reference: dy does not match shape {}x{}", rows, cols));
  std::vector<double> &dx = t.at(softmax::dx);
  dx.assign(n, 0.0);
  parallel_chunks(rows, chunk_for(cols), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const double *yr = y.data() + r * cols;
      const double *dyr = dy.data() + r * cols;
      double dot = 0;
      for (std::int64_t c = 0; c < cols; ++c)
        dot += dyr[c] * yr[c];
      for (std::int64_t c = 0; c < cols; ++c)
        dx[static_cast<std::size_t>(r * cols + c)] = yr[c] * (dyr[c] - dot);
    }
  });
}

/// Each tensor's name and element bytes at protocol dtype `type` (the formulas' s_NAME).
std::vector<std::pair<std::string, std::int64_t>> tensor_sizes(const operation_desc &op,
                                                               dtype type) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const auto &t : op.tensors)
    out.emplace_back(t.name, static_cast<std::int64_t>(element_bytes(t.type(type))));
  return out;
}

// --- the table --------------------------------------------------------------------------------

// Functions, not globals: descriptors may be built during another file's static initialisation.
std::vector<std::string> rows_cols() { return {"rows", "cols"}; }
std::vector<std::string> cols_only() { return {"cols"}; }
std::vector<std::string> rows_only() { return {"rows"}; }
std::vector<pass_kind> both_passes() { return {pass_kind::fwd, pass_kind::fwd_bwd}; }

/// FLOPs per invocation of the forward and of fwd+bwd (a count of the arithmetic per element,
/// docs/operations.md); bytes by the tensor rule.
std::vector<op_pass_formulas> flops_only(std::string fwd, std::string fwd_bwd) {
  return {{pass_kind::fwd, "", std::move(fwd), "", ""},
          {pass_kind::fwd_bwd, "", std::move(fwd_bwd), "", ""}};
}

tensor_desc input(std::string name, std::vector<std::string> dims, bool fwd, bool bwd,
                  input_distribution dist) {
  tensor_desc t;
  t.name = std::move(name);
  t.role = tensor_role::input;
  t.dims = std::move(dims);
  t.fwd = fwd;
  t.bwd = bwd;
  t.dist = dist;
  return t;
}

tensor_desc output(std::string name, std::vector<std::string> dims, bool of_backward,
                   bool read_by_backward = false) {
  tensor_desc t;
  t.name = std::move(name);
  t.role = tensor_role::output;
  t.dims = std::move(dims);
  t.fwd = !of_backward;
  t.bwd = of_backward || read_by_backward;
  t.produced_by_bwd = of_backward;
  t.checked = true;
  return t;
}

tensor_desc saved(std::string name) {
  tensor_desc t;
  t.name = std::move(name);
  t.role = tensor_role::saved;
  t.dims = rows_only();
  t.element = element_rule::fixed;
  t.fixed = dtype::fp32;
  t.fwd = true;
  t.bwd = true;
  t.checked = true;
  return t;
}

// The distributions of reference::random_inputs (kept: every norm cell sees what it saw).
input_distribution uniform(double lo, double hi, double row_offset) {
  input_distribution d;
  d.lo = lo;
  d.hi = hi;
  d.row_offset = row_offset;
  return d;
}
input_distribution x_dist() { return uniform(-2.0, 2.0, 3.0); }
input_distribution gamma_dist() { return uniform(0.5, 1.5, 0.0); }
input_distribution beta_dist() { return uniform(-0.5, 0.5, 0.0); }
input_distribution dy_dist() { return uniform(-1.0, 1.0, 0.0); }

std::vector<operation_desc> build_operations() {
  std::vector<operation_desc> ops;
  {
    operation_desc op;
    op.name = "layernorm";
    op.summary = "y = (x - mean) * rstd * gamma + beta per row; saves mean and rstd";
    op.axes = rows_cols();
    // Input order x, gamma, beta, dy: reference::random_inputs draws them in this order.
    op.tensors = {input("x", rows_cols(), true, true, x_dist()),
                  input("gamma", cols_only(), true, true, gamma_dist()),
                  input("beta", cols_only(), true, false, beta_dist()),
                  input("dy", rows_cols(), false, true, dy_dist()),
                  output("y", rows_cols(), false),
                  saved("mean"),
                  saved("rstd"),
                  output("dx", rows_cols(), true),
                  output("dgamma", cols_only(), true),
                  output("dbeta", cols_only(), true)};
    op.tensors[3].produced_by_bwd = true; // dy exists in fwd+bwd only
    op.passes = both_passes();
    op.eps = norm_eps(operation::layernorm);
    op.formulas = flops_only("7 * rows * cols", "20 * rows * cols");
    op.reference = norm_reference;
    ops.push_back(std::move(op));
  }
  {
    operation_desc op;
    op.name = "rmsnorm";
    op.summary = "y = x * rstd * gamma per row (gamma: the weight); saves rstd";
    op.axes = rows_cols();
    // beta is drawn (and unused) so that the inputs equal reference::random_inputs' draws.
    op.tensors = {input("x", rows_cols(), true, true, x_dist()),
                  input("gamma", cols_only(), true, true, gamma_dist()),
                  input("beta", cols_only(), false, false, beta_dist()),
                  input("dy", rows_cols(), false, true, dy_dist()),
                  output("y", rows_cols(), false),
                  saved("rstd"),
                  output("dx", rows_cols(), true),
                  output("dgamma", cols_only(), true)};
    op.tensors[3].produced_by_bwd = true;
    op.passes = both_passes();
    op.eps = norm_eps(operation::rmsnorm);
    op.formulas = flops_only("4 * rows * cols", "13 * rows * cols");
    op.reference = norm_reference;
    ops.push_back(std::move(op));
  }
  {
    operation_desc op;
    op.name = "softmax";
    op.summary = "y = exp(x - max) / sum(exp(x - max)) per row; backward dx = y * (dy - <dy, y>)";
    op.axes = rows_cols();
    op.tensors = {
        input("x", rows_cols(), true, false, x_dist()), output("y", rows_cols(), false, true),
        input("dy", rows_cols(), false, true, dy_dist()), output("dx", rows_cols(), true)};
    op.tensors[softmax::dy].produced_by_bwd = true;
    op.passes = both_passes();
    op.eps = 0;
    op.formulas = flops_only("5 * rows * cols", "9 * rows * cols");
    op.reference = softmax_reference;
    ops.push_back(std::move(op));
  }
  return ops;
}

} // namespace

int operation_desc::index_of(std::string_view tensor) const {
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == tensor)
      return static_cast<int>(i);
  return -1;
}

int operation_desc::axis_of(std::string_view axis) const {
  for (std::size_t i = 0; i < axes.size(); ++i)
    if (axes[i] == axis)
      return static_cast<int>(i);
  return -1;
}

shape operation_desc::shape_of(std::int64_t rows, std::int64_t cols) const {
  const int r = axis_of("rows"), c = axis_of("cols");
  if (r < 0 || c < 0)
    throw std::logic_error(fmt::format("operation {} lacks the axes rows and cols", name));
  shape s;
  s.extents.assign(axes.size(), 0);
  s.extents[static_cast<std::size_t>(r)] = rows;
  s.extents[static_cast<std::size_t>(c)] = cols;
  return s;
}

std::uint64_t operation_desc::elements(std::size_t i, const shape &s) const {
  std::uint64_t n = 1;
  for (const auto &d : tensors.at(i).dims) {
    const int a = axis_of(d);
    if (a < 0 || static_cast<std::size_t>(a) >= s.extents.size() || s.extents[a] < 0)
      throw invalid_input(fmt::format("operation {}: tensor {} has no extent for axis {}", name,
                                      tensors[i].name, d));
    n = checked_mul(n, static_cast<std::uint64_t>(s.extents[static_cast<std::size_t>(a)]));
  }
  return n;
}

std::size_t operation_desc::element_size(std::size_t i, dtype type) const {
  return element_bytes(tensors.at(i).type(type));
}

input_distribution operation_desc::dist_at(std::size_t i, const shape &s) const {
  const tensor_desc &t = tensors.at(i);
  input_distribution d = t.dist;
  if (d.kind == dist_kind::uniform)
    return d;
  const std::string what = fmt::format("operation {}: the range of {}", name, t.name);
  if (d.kind == dist_kind::index_of) {
    const int j = index_of(d.index_tensor);
    const int a = axis_of(d.index_axis);
    if (j < 0 || a < 0 || static_cast<std::size_t>(a) >= s.extents.size())
      throw invalid_input(fmt::format("{}: index_of names no tensor {} with axis {}", what,
                                      d.index_tensor, d.index_axis));
    d.lo = 0;
    d.hi = static_cast<double>(s.extents[static_cast<std::size_t>(a)]);
  } else {
    const formula_env env{&axes, &s.extents, 1, nullptr};
    const auto bound = [&](const std::string &text) {
      return static_cast<double>(eval_bound(text, env, what));
    };
    d.lo = bound(d.int_lo);
    d.hi = bound(d.int_hi);
  }
  if (!(d.lo < d.hi))
    throw invalid_input(
        fmt::format("{}: [{:.17g}, {:.17g}) is empty at this shape", what, d.lo, d.hi));
  return d;
}

op_tolerance operation_desc::tolerance_of(std::size_t i, const op_tolerance &protocol,
                                          dtype type) const {
  const dtype et = tensors.at(i).type(type);
  if (is_integral(et))
    return {et, 0.0, 0.0};
  if (is_fp8(et))
    for (const auto &t : tolerances)
      if (t.type == et)
        return t;
  return protocol;
}

bool operation_desc::used_in(std::size_t i, pass_kind pass) const {
  const tensor_desc &t = tensors.at(i);
  if (!t.fwd && !t.bwd)
    return false;
  return pass == pass_kind::fwd_bwd || !t.produced_by_bwd;
}

const op_pass_formulas *operation_desc::formulas_of(pass_kind pass) const {
  for (const auto &f : formulas)
    if (f.pass == pass)
      return &f;
  return nullptr;
}

std::optional<std::uint64_t> operation_desc::flops_per_invocation(dtype type, pass_kind pass,
                                                                  const shape &s) const {
  const op_pass_formulas *f = formulas_of(pass);
  if (f == nullptr || f->flops.empty())
    return std::nullopt;
  const auto sizes = tensor_sizes(*this, type);
  const formula_env env{&axes, &s.extents, static_cast<std::int64_t>(element_bytes(type)), &sizes};
  return eval_formula(
      f->flops, env,
      fmt::format("operation {}: the flops formula of pass {}", name, to_string(pass)));
}

std::uint64_t operation_desc::bytes_per_invocation(dtype type, pass_kind pass,
                                                   const shape &s) const {
  if (const op_pass_formulas *f = formulas_of(pass); f != nullptr && !f->bytes.empty()) {
    const auto sizes = tensor_sizes(*this, type);
    const formula_env env{&axes, &s.extents, static_cast<std::int64_t>(element_bytes(type)),
                          &sizes};
    return eval_formula(
        f->bytes, env,
        fmt::format("operation {}: the bytes formula of pass {}", name, to_string(pass)));
  }
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const tensor_desc &t = tensors[i];
    const std::uint64_t b = checked_mul(elements(i, s), element_size(i, type));
    if (t.fwd)
      total = checked_add(total, b);
    if (pass == pass_kind::fwd_bwd && t.bwd)
      total = checked_add(total, b);
  }
  return total;
}

std::span<const operation_desc> all_operations() {
  static const std::vector<operation_desc> ops = build_operations();
  return ops;
}

const operation_desc *find_operation(std::string_view name) {
  for (const auto &op : all_operations())
    if (op.name == name)
      return &op;
  return find_outside_operation(name); // an operation file's, registered in this process
}

const operation_desc &operation_named(std::string_view name) {
  if (const auto *op = find_operation(name))
    return *op;
  throw std::logic_error(fmt::format("unknown operation '{}'", name));
}

} // namespace prereg
