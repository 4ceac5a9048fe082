// The element types beyond fp32, fp16 and bf16 in device code (docs/operations.md, "Element
// types"): fp8 e4m3 and e5m2 rounding and bits, integer and bool storage, each type's poison. The
// same rules as the host's spec/elements.cpp, written for the device.
#pragma once

#include "prereg/arm.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace prereg::cuda {

/// One 8-bit float format (spec/elements.cpp's fp8_format).
struct fp8_format {
  int mantissa_bits;
  int min_exponent;
  int bias;
  double largest;
  bool has_inf;
};

template <dtype D> __host__ __device__ constexpr fp8_format fp8_of() {
  return D == dtype::fp8_e5m2 ? fp8_format{2, -14, 15, 57344.0, true}
                              : fp8_format{3, -6, 7, 448.0, false};
}

/// `v` rounded to format f: mode 0 to nearest (ties to even), -1 down, +1 up.
__device__ __forceinline__ double round_fp8(double v, const fp8_format &f, int mode) {
  if (v == 0.0 || isnan(v) || isinf(v))
    return v;
  const int e = max(ilogb(fabs(v)), f.min_exponent);
  const double quantum = ldexp(1.0, e - f.mantissa_bits);
  const double steps = v / quantum;
  const double k = mode == 0 ? rint(steps) : mode < 0 ? floor(steps) : ceil(steps);
  return k * quantum;
}

/// The bits of `r`, a value of format f (or beyond its largest: NaN / infinity).
__device__ __forceinline__ unsigned char fp8_bits(double r, const fp8_format &f) {
  const unsigned sign = signbit(r) ? 0x80u : 0u;
  const double a = fabs(r);
  if (isnan(r))
    return static_cast<unsigned char>(sign | 0x7fu);
  if (a > f.largest)
    return static_cast<unsigned char>(sign | (f.has_inf ? 0x7cu : 0x7fu));
  if (a == 0.0)
    return static_cast<unsigned char>(sign);
  const int e = ilogb(a);
  if (e < f.min_exponent)
    return static_cast<unsigned char>(
        sign | static_cast<unsigned>(ldexp(a, f.mantissa_bits - f.min_exponent)));
  const unsigned mantissa = static_cast<unsigned>(ldexp(ldexp(a, -e) - 1.0, f.mantissa_bits));
  return static_cast<unsigned char>(sign | (static_cast<unsigned>(e + f.bias) << f.mantissa_bits) |
                                    mantissa);
}

/// The value of fp8 bits (NaN codes give NaN).
__device__ __forceinline__ double fp8_value(unsigned char bits, const fp8_format &f) {
  const bool negative = (bits & 0x80u) != 0;
  const int exponent = (bits & 0x7f) >> f.mantissa_bits;
  const int mantissa = bits & ((1 << f.mantissa_bits) - 1);
  const int top = (1 << (7 - f.mantissa_bits)) - 1;
  if (f.has_inf && exponent == top)
    return mantissa == 0 ? (negative ? -HUGE_VAL : HUGE_VAL) : nan("");
  if (!f.has_inf && exponent == top && mantissa == (1 << f.mantissa_bits) - 1)
    return nan("");
  const double m =
      exponent == 0
          ? ldexp(static_cast<double>(mantissa), f.min_exponent - f.mantissa_bits)
          : ldexp(1.0 + ldexp(static_cast<double>(mantissa), -f.mantissa_bits), exponent - f.bias);
  return negative ? -m : m;
}

/// reference::fp8_inside on the device.
__device__ __forceinline__ double fp8_inside(double v, double lo, double hi, const fp8_format &f) {
  double r = round_fp8(v, f, 0);
  if (r > hi)
    r = round_fp8(hi, f, -1);
  if (r < lo)
    r = round_fp8(lo, f, 1);
  return r;
}

/// Element i of an fp8, integer or bool tensor as a double.
template <dtype D> __device__ __forceinline__ double element_value(const void *p, std::size_t i) {
  if constexpr (D == dtype::fp8_e4m3 || D == dtype::fp8_e5m2)
    return fp8_value(static_cast<const unsigned char *>(p)[i], fp8_of<D>());
  else if constexpr (D == dtype::int8)
    return static_cast<const signed char *>(p)[i];
  else if constexpr (D == dtype::uint8 || D == dtype::boolean)
    return static_cast<const unsigned char *>(p)[i];
  else if constexpr (D == dtype::int32)
    return static_cast<const int *>(p)[i];
  else
    return static_cast<double>(static_cast<const long long *>(p)[i]);
}

/// Writes `v` (a value of the type: an integer, or an fp8 value) as element i.
template <dtype D> __device__ __forceinline__ void store_element(void *p, std::size_t i, double v) {
  if constexpr (D == dtype::fp8_e4m3 || D == dtype::fp8_e5m2)
    static_cast<unsigned char *>(p)[i] = fp8_bits(v, fp8_of<D>());
  else if constexpr (D == dtype::int8)
    static_cast<signed char *>(p)[i] = static_cast<signed char>(v);
  else if constexpr (D == dtype::uint8 || D == dtype::boolean)
    static_cast<unsigned char *>(p)[i] = static_cast<unsigned char>(v);
  else if constexpr (D == dtype::int32)
    static_cast<int *>(p)[i] = static_cast<int>(v);
  else
    static_cast<long long *>(p)[i] = static_cast<long long>(v);
}

/// Whether element i holds the poison's low bytes `poison` (reference::poison_bits).
template <dtype D>
__device__ __forceinline__ bool element_is_poison(const void *p, std::size_t i,
                                                  unsigned long long poison) {
  if constexpr (D == dtype::int32)
    return static_cast<const unsigned *>(p)[i] == static_cast<unsigned>(poison);
  else if constexpr (D == dtype::int64)
    return static_cast<const unsigned long long *>(p)[i] == poison;
  else
    return static_cast<const unsigned char *>(p)[i] == static_cast<unsigned char>(poison);
}

/// Calls f.template operator()<D>() for an fp8, integer or bool `type`; false for the others.
template <class F> bool dispatch_typed(dtype type, F &&f) {
  switch (type) {
  case dtype::fp8_e4m3:
    f.template operator()<dtype::fp8_e4m3>();
    return true;
  case dtype::fp8_e5m2:
    f.template operator()<dtype::fp8_e5m2>();
    return true;
  case dtype::int8:
    f.template operator()<dtype::int8>();
    return true;
  case dtype::uint8:
    f.template operator()<dtype::uint8>();
    return true;
  case dtype::int32:
    f.template operator()<dtype::int32>();
    return true;
  case dtype::int64:
    f.template operator()<dtype::int64>();
    return true;
  case dtype::boolean:
    f.template operator()<dtype::boolean>();
    return true;
  default:
    return false;
  }
}

} // namespace prereg::cuda
