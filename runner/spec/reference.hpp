// The float64 reference of every operation and pass, and the host-side data helpers shared by
// the CPU and CUDA backends: fp16/bf16 conversion, random inputs, poison, tolerance checks.
#pragma once

#include "prereg/arm.hpp"
#include "spec/operation.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace prereg::reference {

/// Inputs of one invocation, as doubles (already rounded to the dtype they are stored in).
struct inputs64 {
  std::vector<double> x, gamma, beta, dy; ///< x, dy: [rows*cols]; gamma, beta: [cols]
  std::int64_t rows = 0, cols = 0;
};

/// The float64 reference outputs. dx/dgamma/dbeta are filled only when backward is asked.
struct outputs64 {
  std::vector<double> y, mean, rstd, dx, dgamma, dbeta;
};

/// The normalisation named `name` ("layernorm" | "rmsnorm", a protocol's or an arm's operation);
/// throws std::logic_error for any other operation: this reference covers the two
/// normalisations only (an operation descriptor carries its own reference).
[[nodiscard]] operation norm_operation(std::string_view name);

/// The float64 reference of `op` (eps = norm_eps(op)); RMSNorm ignores beta and mean.
[[nodiscard]] outputs64 compute(operation op, const inputs64 &in, bool backward);

/// Fresh random inputs (never zeros): x ~ U(-2, 2) plus a per-row offset, gamma ~ 1 + U(-.5,.5),
/// beta ~ U(-.5, .5), dy ~ U(-1, 1), each rounded to `type`. Deterministic in `seed`.
[[nodiscard]] inputs64 random_inputs(std::int64_t rows, std::int64_t cols, dtype type,
                                     std::uint64_t seed);

/// Round-to-nearest-even conversions between float and the 16-bit storage types.
[[nodiscard]] std::uint16_t float_to_half(float f);
[[nodiscard]] float half_to_float(std::uint16_t h);
[[nodiscard]] std::uint16_t float_to_bf16(float f);
[[nodiscard]] float bf16_to_float(std::uint16_t h);

/// The largest finite value of a floating-point `type` (fp8_e4m3 448, fp8_e5m2 57344); the
/// largest value of an integer one.
[[nodiscard]] double largest_finite(dtype type);
/// The least and largest value an integer or bool `type` holds (int64: +-2^53, the values a
/// float64 holds exactly); +-infinity for a floating-point one.
[[nodiscard]] std::pair<double, double> integer_limits(dtype type);
/// The bits of `v` in fp8 `type`, rounded to nearest, ties to even; past the largest finite
/// value e4m3 (fn) gives NaN 0x7f, e5m2 infinity; NaN gives 0x7f.
[[nodiscard]] std::uint8_t to_fp8(double v, dtype type);
/// The value of fp8 `bits` (NaN codes: a quiet NaN; the poison's byte: the poison NaN).
[[nodiscard]] double from_fp8(std::uint8_t bits, dtype type);
/// `v` rounded to fp8 `type` and kept inside [lo, hi]: rounded to nearest, then, if that left the
/// range, the representable value nearest inside it (docs/engine.md, the fp8 fill).
[[nodiscard]] double fp8_inside(double v, double lo, double hi, dtype type);
/// A nonzero fp8 value inside [lo, hi] (the fill's fallback), or 0 when there is none.
[[nodiscard]] double fp8_fallback(double lo, double hi, dtype type);
/// One element of an fp8, integer or bool `type` written at dst / read from src (integers
/// rounded to nearest; fp32, fp16 and bf16 are pack()'s and unpack()'s own).
void encode(double v, dtype type, std::uint8_t *dst);
[[nodiscard]] double decode(const std::uint8_t *src, dtype type);
/// Whether the element at src holds `type`'s poison bytes.
[[nodiscard]] bool is_poison_element(const std::uint8_t *src, dtype type);
/// unpack() of an output: an integer or bool element holding the poison (a value no output
/// holds) becomes the poison NaN, as a floating-point poison unpacks.
[[nodiscard]] std::vector<double> unpack_output(const std::vector<std::uint8_t> &bytes, dtype type);
/// The NaN every poison unpacks to (is_poison() is true of it).
[[nodiscard]] double poison_nan();

/// Packs doubles into `type`'s storage bytes (fp32: float, fp16/bf16: uint16).
[[nodiscard]] std::vector<std::uint8_t> pack(const std::vector<double> &v, dtype type);
/// Unpacks `type`'s storage bytes into doubles.
[[nodiscard]] std::vector<double> unpack(const std::vector<std::uint8_t> &bytes, dtype type);
/// `n` elements of `type` filled with the poison: a quiet-NaN bit pattern no arithmetic makes
/// (fp8: a negative NaN), an integer no output holds (its type's least; uint8 255), a bool byte
/// that is neither 0 nor 1 (0xa5).
[[nodiscard]] std::vector<std::uint8_t> poison(std::size_t n, dtype type);
/// The poison's bit pattern of one element of `type` (the low element_bytes(type) bytes).
[[nodiscard]] std::uint64_t poison_bits(dtype type);
/// Fills `n` elements of `type` at host address p with the poison (poison()'s bytes), over
/// every core.
void fill_poison(void *p, std::size_t n, dtype type);

/// Compares one output with its reference: element passes if |out-ref| <= atol + rtol*max|ref|
/// (rtol is relative to the output's largest reference magnitude, so column sums that cancel
/// are judged against the scale of their terms)
/// (NaN never passes; a NaN output where the poison was is reported as unwritten). An output of
/// two or more elements that are all equal fails (`constant`) when the reference's spread
/// (max - min) exceeds rtol*max|ref|; an all-zero output of two or more elements fails when
/// the reference is not all zero.
struct comparison {
  double max_abs_error = 0;
  double max_rel_error = 0; ///< |out-ref| / max(|ref|, tiny)
  bool unwritten = false;
  /// Every element is the same number (or zero) while the reference is not: the output fails
  /// whatever the tolerances (a weak atol must not pass zeros or a constant).
  bool constant = false;
  bool passed = true;
  std::int64_t first_bad = -1; ///< index of the first failing element, or -1
};
[[nodiscard]] comparison compare(const std::vector<double> &out, const std::vector<double> &ref,
                                 double rtol, double atol);

/// Whether `v` is the poison of some dtype, as unpack() returns it (a NaN that an arm never
/// computes: it carries the poison's payload).
[[nodiscard]] bool is_poison(double v);

/// `v` rounded (to nearest, ties to even) to the values `type` can hold.
[[nodiscard]] double round_to(double v, dtype type);

/// Fresh random inputs (never zeros) of every input tensor of `op` at shape `s`, drawn in the
/// descriptor's tensor order from one generator seeded with `seed`: per tensor with a per-row
/// offset, one offset U(-row_offset, row_offset) per row and then the row's elements; each
/// element U(lo, hi) (plus the offset) rounded to its element type, drawn again while it
/// rounds to zero. Outputs and saved tensors are left empty. For layernorm and rmsnorm this
/// draws exactly what random_inputs() draws.
[[nodiscard]] host_tensors random_tensors(const operation_desc &op, const shape &s, dtype type,
                                          std::uint64_t seed);

/// The seed of one cell's random inputs: `stream_seed(plan_seed, stream_id::inputs)` mixed
/// with rows, cols and the pass through the generator (identical for every arm of the cell).
[[nodiscard]] std::uint64_t cell_seed(std::uint64_t plan_seed, pass_kind pass, std::int64_t rows,
                                      std::int64_t cols);

} // namespace prereg::reference
