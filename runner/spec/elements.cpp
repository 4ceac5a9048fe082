// The element types beyond fp32, fp16 and bf16 on the host (docs/operations.md, "Element types"):
// fp8 e4m3 and e5m2 rounding and bits, integer and bool limits, their storage and poison.
#include "spec/reference.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace prereg::reference {
namespace {

/// One 8-bit float format: mantissa bits, the smallest normal exponent, the exponent bias, the
/// largest finite value, and whether it has an infinity (e5m2) or saturates to NaN (e4m3 fn).
struct fp8_format {
  int mantissa_bits;
  int min_exponent;
  int bias;
  double largest;
  bool has_inf;
};

constexpr fp8_format e4m3{3, -6, 7, 448.0, false};
constexpr fp8_format e5m2{2, -14, 15, 57344.0, true};

const fp8_format &format_of(dtype type) { return type == dtype::fp8_e5m2 ? e5m2 : e4m3; }

enum class rounding { nearest, down, up };

/// `v` rounded to a value of format `f` (ties to even for nearest); a magnitude past the
/// largest finite value is returned as it is (the caller saturates or overflows).
double round_fp8(double v, const fp8_format &f, rounding mode) {
  if (v == 0.0 || std::isnan(v) || std::isinf(v))
    return v;
  const int e = std::max(std::ilogb(std::fabs(v)), f.min_exponent);
  const double quantum = std::ldexp(1.0, e - f.mantissa_bits);
  const double steps = v / quantum; // exact: quantum is a power of two
  const double k = mode == rounding::nearest ? std::nearbyint(steps)
                   : mode == rounding::down  ? std::floor(steps)
                                             : std::ceil(steps);
  return k * quantum;
}

} // namespace

double largest_finite(dtype type) {
  switch (type) {
  case dtype::fp32:
    return static_cast<double>(std::numeric_limits<float>::max());
  case dtype::fp16:
    return 65504.0;
  case dtype::bf16:
    return static_cast<double>(bf16_to_float(0x7f7f));
  case dtype::fp8_e4m3:
  case dtype::fp8_e5m2:
    return format_of(type).largest;
  default:
    return integer_limits(type).second;
  }
}

std::pair<double, double> integer_limits(dtype type) {
  switch (type) {
  case dtype::int8:
    return {-128.0, 127.0};
  case dtype::uint8:
    return {0.0, 255.0};
  case dtype::int32:
    return {-2147483648.0, 2147483647.0};
  case dtype::int64: // the values a float64 holds exactly
    return {-9007199254740992.0, 9007199254740992.0};
  case dtype::boolean:
    return {0.0, 1.0};
  default:
    return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  }
}

std::uint8_t to_fp8(double v, dtype type) {
  const fp8_format &f = format_of(type);
  const std::uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  if (std::isnan(v))
    return static_cast<std::uint8_t>(sign | 0x7f);
  const double r = std::fabs(round_fp8(v, f, rounding::nearest));
  if (r > f.largest) // e4m3 fn has no infinity: NaN; e5m2: infinity
    return static_cast<std::uint8_t>(sign | (f.has_inf ? 0x7c : 0x7f));
  if (r == 0.0)
    return sign;
  const int e = std::ilogb(r);
  if (e < f.min_exponent) // subnormal: exponent field 0
    return static_cast<std::uint8_t>(
        sign | static_cast<int>(std::ldexp(r, f.mantissa_bits - f.min_exponent)));
  const int mantissa =
      static_cast<int>(std::ldexp(std::ldexp(r, -e) - 1.0, f.mantissa_bits)); // exact
  return static_cast<std::uint8_t>(sign | ((e + f.bias) << f.mantissa_bits) | mantissa);
}

double from_fp8(std::uint8_t bits, dtype type) {
  const fp8_format &f = format_of(type);
  const bool negative = (bits & 0x80) != 0;
  const int exponent = (bits & 0x7f) >> f.mantissa_bits;
  const int mantissa = bits & ((1 << f.mantissa_bits) - 1);
  const int top = (1 << (7 - f.mantissa_bits)) - 1; // the all-ones exponent field
  if (bits == static_cast<std::uint8_t>(poison_bits(type)))
    return poison_nan();
  if (f.has_inf && exponent == top)
    return mantissa == 0 ? (negative ? -HUGE_VAL : HUGE_VAL)
                         : std::numeric_limits<double>::quiet_NaN();
  if (!f.has_inf && exponent == top && mantissa == (1 << f.mantissa_bits) - 1)
    return std::numeric_limits<double>::quiet_NaN();
  const double magnitude =
      exponent == 0 ? std::ldexp(static_cast<double>(mantissa), f.min_exponent - f.mantissa_bits)
                    : std::ldexp(1.0 + std::ldexp(static_cast<double>(mantissa), -f.mantissa_bits),
                                 exponent - f.bias);
  return negative ? -magnitude : magnitude;
}

double fp8_inside(double v, double lo, double hi, dtype type) {
  const fp8_format &f = format_of(type);
  double r = round_fp8(v, f, rounding::nearest);
  if (r > hi)
    r = round_fp8(hi, f, rounding::down);
  if (r < lo)
    r = round_fp8(lo, f, rounding::up);
  return r;
}

double fp8_fallback(double lo, double hi, dtype type) {
  const fp8_format &f = format_of(type);
  const double up = round_fp8(lo, f, rounding::up);
  if (up != 0.0 && up <= hi && std::fabs(up) <= f.largest)
    return up;
  const double down = round_fp8(hi, f, rounding::down);
  if (down != 0.0 && down >= lo && std::fabs(down) <= f.largest)
    return down;
  const double tiny = std::ldexp(1.0, f.min_exponent - f.mantissa_bits);
  if (tiny >= lo && tiny <= hi)
    return tiny;
  if (-tiny >= lo && -tiny <= hi)
    return -tiny;
  return 0.0;
}

void encode(double v, dtype type, std::uint8_t *dst) {
  switch (type) {
  case dtype::fp8_e4m3:
  case dtype::fp8_e5m2:
    *dst = to_fp8(v, type);
    return;
  case dtype::int8: {
    const auto i = static_cast<std::int8_t>(std::nearbyint(v));
    std::memcpy(dst, &i, 1);
    return;
  }
  case dtype::uint8:
  case dtype::boolean:
    *dst = static_cast<std::uint8_t>(std::nearbyint(v));
    return;
  case dtype::int32: {
    const auto i = static_cast<std::int32_t>(std::nearbyint(v));
    std::memcpy(dst, &i, 4);
    return;
  }
  case dtype::int64: {
    const auto i = static_cast<std::int64_t>(std::nearbyint(v));
    std::memcpy(dst, &i, 8);
    return;
  }
  default: // fp32, fp16, bf16: pack()'s own code
    return;
  }
}

double decode(const std::uint8_t *src, dtype type) {
  switch (type) {
  case dtype::fp8_e4m3:
  case dtype::fp8_e5m2:
    return from_fp8(*src, type);
  case dtype::int8: {
    std::int8_t i;
    std::memcpy(&i, src, 1);
    return i;
  }
  case dtype::uint8:
  case dtype::boolean:
    return *src;
  case dtype::int32: {
    std::int32_t i;
    std::memcpy(&i, src, 4);
    return i;
  }
  case dtype::int64: {
    std::int64_t i;
    std::memcpy(&i, src, 8);
    return static_cast<double>(i);
  }
  default:
    return 0.0;
  }
}

bool is_poison_element(const std::uint8_t *src, dtype type) {
  const std::uint64_t bits = poison_bits(type);
  const std::size_t width = element_bytes(type);
  for (std::size_t b = 0; b < width; ++b)
    if (src[b] != static_cast<std::uint8_t>(bits >> (8 * b)))
      return false;
  return true;
}

std::vector<double> unpack_output(const std::vector<std::uint8_t> &bytes, dtype type) {
  std::vector<double> v = unpack(bytes, type);
  if (is_integral(type))
    for (std::size_t i = 0; i < v.size(); ++i)
      if (is_poison_element(bytes.data() + i * element_bytes(type), type))
        v[i] = poison_nan();
  return v;
}

} // namespace prereg::reference
