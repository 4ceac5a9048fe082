// Random inputs (docs/engine.md, "Inputs"): the normalisations' draws, every input of an
// operation descriptor drawn in its tensor order, and the seed of one cell's inputs.
#include "spec/reference.hpp"

#include "base/rng.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

namespace prereg::reference {

inputs64 random_inputs(std::int64_t rows, std::int64_t cols, dtype type, std::uint64_t seed) {
  if (rows < 1 || cols < 1)
    throw invalid_input(fmt::format("random_inputs: bad shape {}x{}", rows, cols));
  rng g(seed);
  // U(lo, hi) rounded to `type`, drawn again while it rounds to zero.
  auto draw = [&](double lo, double hi, double shift) {
    for (;;) {
      const double v = round_to(shift + lo + (hi - lo) * g.uniform(), type);
      if (v != 0.0)
        return v;
    }
  };
  inputs64 in;
  in.rows = rows;
  in.cols = cols;
  const auto n = static_cast<std::size_t>(rows * cols);
  in.x.reserve(n);
  for (std::int64_t r = 0; r < rows; ++r) {
    const double offset = -3.0 + 6.0 * g.uniform();
    for (std::int64_t c = 0; c < cols; ++c)
      in.x.push_back(draw(-2.0, 2.0, offset));
  }
  for (std::int64_t c = 0; c < cols; ++c)
    in.gamma.push_back(draw(-0.5, 0.5, 1.0));
  for (std::int64_t c = 0; c < cols; ++c)
    in.beta.push_back(draw(-0.5, 0.5, 0.0));
  in.dy.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    in.dy.push_back(draw(-1.0, 1.0, 0.0));
  return in;
}

namespace {

/// Input i of an integer, bool or fp8 type (docs/engine.md): integers lo + below(hi - lo) for
/// [lo, hi) at the shape; fp8 U(lo, hi) kept inside the range by fp8_inside, drawn again while
/// zero (64 attempts, then fp8_fallback).
std::vector<double> draw_typed(const operation_desc &op, std::size_t i, const shape &s, dtype et,
                               rng &g) {
  const input_distribution d = op.dist_at(i, s);
  std::vector<double> v(static_cast<std::size_t>(op.elements(i, s)));
  for (double &x : v) {
    if (d.kind != dist_kind::uniform) {
      x = d.lo + static_cast<double>(g.below(static_cast<std::uint64_t>(d.hi - d.lo)));
      continue;
    }
    x = 0.0;
    for (int attempt = 0; attempt < 64 && x == 0.0; ++attempt)
      x = fp8_inside(d.lo + (d.hi - d.lo) * g.uniform(), d.lo, d.hi, et);
    if (x == 0.0)
      x = fp8_fallback(d.lo, d.hi, et);
  }
  return v;
}

} // namespace

host_tensors random_tensors(const operation_desc &op, const shape &s, dtype type,
                            std::uint64_t seed) {
  rng g(seed);
  host_tensors t(op.tensors.size());
  for (std::size_t i = 0; i < op.tensors.size(); ++i) {
    const tensor_desc &d = op.tensors[i];
    if (d.role != tensor_role::input)
      continue;
    const dtype et = d.type(type);
    if (d.dist.kind != dist_kind::uniform || is_fp8(et)) {
      t[i] = draw_typed(op, i, s, et, g);
      continue;
    }
    auto draw = [&](double shift) {
      for (;;) {
        const double v = round_to(shift + d.dist.lo + (d.dist.hi - d.dist.lo) * g.uniform(), et);
        if (v != 0.0)
          return v;
      }
    };
    const std::uint64_t n = op.elements(i, s);
    t[i].reserve(static_cast<std::size_t>(n));
    if (d.dist.row_offset != 0 && d.dims.size() >= 2) {
      const std::int64_t rows = s.extents.at(static_cast<std::size_t>(op.axis_of(d.dims[0])));
      const std::uint64_t inner = n / static_cast<std::uint64_t>(rows);
      for (std::int64_t r = 0; r < rows; ++r) {
        const double offset = -d.dist.row_offset + 2 * d.dist.row_offset * g.uniform();
        for (std::uint64_t c = 0; c < inner; ++c)
          t[i].push_back(draw(offset));
      }
    } else {
      for (std::uint64_t k = 0; k < n; ++k)
        t[i].push_back(draw(0.0));
    }
  }
  return t;
}

std::uint64_t cell_seed(std::uint64_t plan_seed, pass_kind pass, std::int64_t rows,
                        std::int64_t cols) {
  std::uint64_t s = stream_seed(plan_seed, stream_id::inputs);
  s = rng(s ^ static_cast<std::uint64_t>(rows)).next();
  s = rng(s ^ static_cast<std::uint64_t>(cols)).next();
  return rng(s ^ (pass == pass_kind::fwd ? 0u : 1u)).next();
}

} // namespace prereg::reference
