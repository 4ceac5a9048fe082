// The float64 reference of LayerNorm and RMSNorm, 16-bit conversions, inputs, poison, compare.
#include "spec/reference.hpp"

#include "base/parallel.hpp"
#include "base/rng.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace prereg::reference {
namespace {

// Quiet NaNs with a payload no arithmetic produces (a computed NaN has payload 0).
constexpr std::uint32_t poison_fp32 = 0x7fe5a5a5u;
constexpr std::uint16_t poison_fp16 = 0x7e5au;
constexpr std::uint16_t poison_bf16 = 0x7fe5u;

// float -> double keeping a NaN's sign and payload bit for bit (no reliance on the FPU).
double widen(float f) {
  if (!std::isnan(f))
    return static_cast<double>(f);
  const auto b = std::bit_cast<std::uint32_t>(f);
  const std::uint64_t d = (static_cast<std::uint64_t>(b >> 31) << 63) | (0x7ffull << 52) |
                          (static_cast<std::uint64_t>(b & 0x7fffffu) << 29);
  return std::bit_cast<double>(d);
}

// double -> float rounded toward zero with a sticky bit in the last place ("round to odd"):
// rounding the result to a format with at least 2 fewer significant bits is then the correct
// round-to-nearest-even of the double (no double rounding).
float narrow_to_odd(double d) {
  if (std::isnan(d) || std::isinf(d))
    return static_cast<float>(d);
  float f = static_cast<float>(d);
  if (std::fabs(static_cast<double>(f)) > std::fabs(d))
    f = std::nextafter(f, 0.0f); // also maps an overflow to inf back to FLT_MAX
  if (static_cast<double>(f) != d)
    f = std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
  return f;
}

double mean_of(const double *v, std::int64_t n) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i)
    s += v[i];
  return s / static_cast<double>(n);
}

void check_inputs(operation op, const inputs64 &in, bool backward) {
  const auto n = static_cast<std::size_t>(in.rows * in.cols);
  if (in.rows < 1 || in.cols < 1 || in.x.size() != n ||
      in.gamma.size() != static_cast<std::size_t>(in.cols) ||
      (op == operation::layernorm && in.beta.size() != static_cast<std::size_t>(in.cols)) ||
      (backward && in.dy.size() != n))
    throw invalid_input(
        fmt::format("reference: inputs do not match shape {}x{}", in.rows, in.cols));
}

// Rows run in parallel (each row's statistics, y and dx from that row alone); the column sums
// (dgamma, dbeta) run in parallel over columns, each summing its rows in row order: the same
// bytes as one thread walking the rows.
outputs64 layernorm(const inputs64 &in, bool backward) {
  const std::int64_t rows = in.rows, cols = in.cols;
  const double eps = norm_eps(operation::layernorm);
  const auto n = static_cast<std::size_t>(rows * cols);
  outputs64 out;
  out.y.resize(n);
  out.mean.resize(rows);
  out.rstd.resize(rows);
  if (backward) {
    out.dx.resize(n);
    out.dgamma.assign(cols, 0.0);
    out.dbeta.assign(cols, 0.0);
  }
  parallel_chunks(rows, chunk_for(cols), [&](std::int64_t r0, std::int64_t r1) {
    std::vector<double> xhat(cols), dxhat(cols);
    for (std::int64_t r = r0; r < r1; ++r) {
      const double *x = in.x.data() + r * cols;
      const double mean = mean_of(x, cols);
      double var = 0;
      for (std::int64_t c = 0; c < cols; ++c)
        var += (x[c] - mean) * (x[c] - mean);
      var /= static_cast<double>(cols);
      const double rstd = 1.0 / std::sqrt(var + eps);
      out.mean[r] = mean;
      out.rstd[r] = rstd;
      for (std::int64_t c = 0; c < cols; ++c) {
        xhat[c] = (x[c] - mean) * rstd;
        out.y[r * cols + c] = xhat[c] * in.gamma[c] + in.beta[c];
      }
      if (!backward)
        continue;
      const double *dy = in.dy.data() + r * cols;
      double m1 = 0, m2 = 0;
      for (std::int64_t c = 0; c < cols; ++c) {
        dxhat[c] = dy[c] * in.gamma[c];
        m1 += dxhat[c];
        m2 += dxhat[c] * xhat[c];
      }
      m1 /= static_cast<double>(cols);
      m2 /= static_cast<double>(cols);
      for (std::int64_t c = 0; c < cols; ++c)
        out.dx[r * cols + c] = rstd * (dxhat[c] - m1 - xhat[c] * m2);
    }
  });
  if (backward)
    parallel_chunks(cols, chunk_for(rows), [&](std::int64_t c0, std::int64_t c1) {
      for (std::int64_t r = 0; r < rows; ++r) {
        const double *x = in.x.data() + r * cols;
        const double *dy = in.dy.data() + r * cols;
        for (std::int64_t c = c0; c < c1; ++c) {
          const double xhat = (x[c] - out.mean[r]) * out.rstd[r];
          out.dgamma[c] += dy[c] * xhat;
          out.dbeta[c] += dy[c];
        }
      }
    });
  return out;
}

outputs64 rmsnorm(const inputs64 &in, bool backward) {
  const std::int64_t rows = in.rows, cols = in.cols;
  const double eps = norm_eps(operation::rmsnorm);
  const auto n = static_cast<std::size_t>(rows * cols);
  outputs64 out;
  out.y.resize(n);
  out.rstd.resize(rows);
  if (backward) {
    out.dx.resize(n);
    out.dgamma.assign(cols, 0.0);
  }
  parallel_chunks(rows, chunk_for(cols), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const double *x = in.x.data() + r * cols;
      double ms = 0;
      for (std::int64_t c = 0; c < cols; ++c)
        ms += x[c] * x[c];
      ms /= static_cast<double>(cols);
      const double rstd = 1.0 / std::sqrt(ms + eps);
      out.rstd[r] = rstd;
      for (std::int64_t c = 0; c < cols; ++c)
        out.y[r * cols + c] = x[c] * rstd * in.gamma[c];
      if (!backward)
        continue;
      const double *dy = in.dy.data() + r * cols;
      double m = 0;
      for (std::int64_t c = 0; c < cols; ++c)
        m += dy[c] * in.gamma[c] * x[c];
      m /= static_cast<double>(cols);
      for (std::int64_t c = 0; c < cols; ++c)
        out.dx[r * cols + c] = rstd * (dy[c] * in.gamma[c] - x[c] * rstd * rstd * m);
    }
  });
  if (backward)
    parallel_chunks(cols, chunk_for(rows), [&](std::int64_t c0, std::int64_t c1) {
      for (std::int64_t r = 0; r < rows; ++r) {
        const double *x = in.x.data() + r * cols;
        const double *dy = in.dy.data() + r * cols;
        for (std::int64_t c = c0; c < c1; ++c)
          out.dgamma[c] += dy[c] * x[c] * out.rstd[r];
      }
    });
  return out;
}

} // namespace

operation norm_operation(std::string_view name) {
  if (name == "layernorm")
    return operation::layernorm;
  if (name == "rmsnorm")
    return operation::rmsnorm;
  throw std::logic_error("the normalisation reference has no operation " + std::string(name));
}

outputs64 compute(operation op, const inputs64 &in, bool backward) {
  check_inputs(op, in, backward);
  return op == operation::layernorm ? layernorm(in, backward) : rmsnorm(in, backward);
}

double round_to(double v, dtype type) {
  switch (type) {
  case dtype::fp32:
    return static_cast<double>(static_cast<float>(v));
  case dtype::fp16:
    return half_to_float(float_to_half(narrow_to_odd(v)));
  case dtype::bf16:
    return bf16_to_float(float_to_bf16(narrow_to_odd(v)));
  case dtype::fp8_e4m3:
  case dtype::fp8_e5m2:
    return from_fp8(to_fp8(v, type), type);
  case dtype::boolean:
    return v != 0.0 ? 1.0 : 0.0;
  case dtype::int8:
  case dtype::uint8:
  case dtype::int32:
  case dtype::int64:
    return std::nearbyint(v);
  }
  return v;
}

std::uint16_t float_to_half(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t a = bits & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN: quiet, keeping the payload's top bits
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u)
    return sign | 0x7c00u; // >= 65520 (the tie above 65504) and inf
  if (a >= 0x38800000u) {  // normal half: >= 2^-14
    std::uint32_t h = (((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3ffu);
    const std::uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
      ++h; // a carry lands in the exponent
    return static_cast<std::uint16_t>(sign | h);
  }
  if (a < 0x33000000u)
    return sign; // below 2^-25 (the tie at 2^-25 goes to even: zero)
  // Subnormal half: value / 2^-24 rounded to nearest even.
  const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const int e = static_cast<int>(a >> 23) - 127; // -25 .. -15
  const int shift = -e - 1;                      // 14 .. 24
  std::uint32_t h = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (h & 1u)))
    ++h;
  return static_cast<std::uint16_t>(sign | h);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu;
  std::uint32_t m = h & 0x3ffu;
  if (e == 0x1f)
    return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  if (e != 0)
    return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
  if (m == 0)
    return std::bit_cast<float>(sign);
  int exp = -14; // subnormal: normalise
  while ((m & 0x400u) == 0) {
    m <<= 1;
    --exp;
  }
  return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(exp + 127) << 23) |
                              ((m & 0x3ffu) << 13));
}

std::uint16_t float_to_bf16(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: quiet, keeping the payload's top bits
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u); // overflow gives inf
  return static_cast<std::uint16_t>(rounded >> 16);
}

float bf16_to_float(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

namespace {

/// Whether `type` is one of the three the first operations had (fp32, fp16, bf16).
bool classic(dtype type) {
  return type == dtype::fp32 || type == dtype::fp16 || type == dtype::bf16;
}

} // namespace

std::vector<std::uint8_t> pack(const std::vector<double> &v, dtype type) {
  std::vector<std::uint8_t> bytes(v.size() * element_bytes(type));
  if (!classic(type)) {
    const std::size_t w = element_bytes(type);
    for (std::size_t i = 0; i < v.size(); ++i)
      encode(v[i], type, bytes.data() + i * w);
    return bytes;
  }
  parallel_chunks(
      static_cast<std::int64_t>(v.size()), chunk_for(1), [&](std::int64_t i0, std::int64_t i1) {
        for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i) {
          if (type == dtype::fp32) {
            const float f = static_cast<float>(v[i]);
            std::memcpy(bytes.data() + 4 * i, &f, 4);
          } else {
            const float f = narrow_to_odd(v[i]);
            const std::uint16_t h = type == dtype::fp16 ? float_to_half(f) : float_to_bf16(f);
            std::memcpy(bytes.data() + 2 * i, &h, 2);
          }
        }
      });
  return bytes;
}

std::vector<double> unpack(const std::vector<std::uint8_t> &bytes, dtype type) {
  const std::size_t eb = element_bytes(type);
  if (bytes.size() % eb != 0)
    throw invalid_input(fmt::format("unpack: {} bytes is not a whole number of {} elements",
                                    bytes.size(), to_string(type)));
  std::vector<double> v(bytes.size() / eb);
  if (!classic(type)) {
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = decode(bytes.data() + i * eb, type);
    return v;
  }
  parallel_chunks(
      static_cast<std::int64_t>(v.size()), chunk_for(1), [&](std::int64_t i0, std::int64_t i1) {
        for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i) {
          if (type == dtype::fp32) {
            float f;
            std::memcpy(&f, bytes.data() + 4 * i, 4);
            v[i] = widen(f);
          } else {
            std::uint16_t h;
            std::memcpy(&h, bytes.data() + 2 * i, 2);
            v[i] = widen(type == dtype::fp16 ? half_to_float(h) : bf16_to_float(h));
          }
        }
      });
  return v;
}

std::uint64_t poison_bits(dtype type) {
  switch (type) {
  case dtype::fp32:
    return poison_fp32;
  case dtype::fp16:
    return poison_fp16;
  case dtype::bf16:
    return poison_bf16;
  case dtype::fp8_e4m3: // a negative NaN: a conversion of a computed NaN gives 0x7f
    return 0xffu;
  case dtype::fp8_e5m2: // a negative NaN other than the quiet ones conversions give
    return 0xfdu;
  case dtype::int8:
    return 0x80u;
  case dtype::uint8:
    return 0xffu;
  case dtype::int32:
    return 0x80000000u;
  case dtype::int64:
    return 0x8000000000000000ull;
  case dtype::boolean:
    return 0xa5u;
  }
  return 0;
}

double poison_nan() { return widen(std::bit_cast<float>(poison_fp32)); }

void fill_poison(void *p, std::size_t n, dtype type) {
  auto *bytes = static_cast<std::uint8_t *>(p);
  if (!classic(type)) {
    const std::uint64_t wide = poison_bits(type);
    const std::size_t w = element_bytes(type);
    for (std::size_t i = 0; i < n; ++i)
      std::memcpy(bytes + i * w, &wide, w); // little-endian: the low w bytes
    return;
  }
  const auto bits = static_cast<std::uint32_t>(poison_bits(type));
  const auto half = static_cast<std::uint16_t>(bits);
  parallel_chunks(
      static_cast<std::int64_t>(n), chunk_for(1), [&](std::int64_t i0, std::int64_t i1) {
        for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i) {
          if (type == dtype::fp32)
            std::memcpy(bytes + 4 * i, &bits, 4);
          else
            std::memcpy(bytes + 2 * i, &half, 2);
        }
      });
}

std::vector<std::uint8_t> poison(std::size_t n, dtype type) {
  std::vector<std::uint8_t> bytes(n * element_bytes(type));
  fill_poison(bytes.data(), n, type);
  return bytes;
}

bool is_poison(double v) {
  if (!std::isnan(v))
    return false;
  const auto bits = std::bit_cast<std::uint64_t>(v);
  return bits == std::bit_cast<std::uint64_t>(widen(std::bit_cast<float>(poison_fp32))) ||
         bits == std::bit_cast<std::uint64_t>(widen(half_to_float(poison_fp16))) ||
         bits == std::bit_cast<std::uint64_t>(widen(bf16_to_float(poison_bf16)));
}

namespace {

/// One chunk's part of compare(): every reduction is a max, a min or an or, so the chunks'
/// parts combine to the same result whatever the thread count.
struct compare_part {
  double max_abs = 0, max_rel = 0;
  bool unwritten = false;
  std::int64_t first_bad = -1;
  bool same = true, zero = true, ref_zero = true;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::int64_t first_diff = -1; ///< first index where out != ref
};

compare_part compare_chunk(const std::vector<double> &out, const std::vector<double> &ref,
                           double tolerance, std::int64_t i0, std::int64_t i1) {
  compare_part p;
  const double first = out[0];
  for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i) {
    bool ok;
    if (std::isnan(out[i]) || std::isnan(ref[i])) {
      ok = false;
      if (is_poison(out[i]))
        p.unwritten = true;
    } else {
      const double err = std::fabs(out[i] - ref[i]);
      const double rel = err / std::max(std::fabs(ref[i]), std::numeric_limits<double>::min());
      p.max_abs = std::max(p.max_abs, err);
      p.max_rel = std::max(p.max_rel, rel);
      ok = err <= tolerance;
    }
    if (!ok && p.first_bad < 0)
      p.first_bad = static_cast<std::int64_t>(i);
    p.same = p.same && out[i] == first;
    p.zero = p.zero && out[i] == 0.0;
    p.ref_zero = p.ref_zero && ref[i] == 0.0;
    p.lo = std::min(p.lo, ref[i]);
    p.hi = std::max(p.hi, ref[i]);
    if (p.first_diff < 0 && ref[i] != out[i])
      p.first_diff = static_cast<std::int64_t>(i);
  }
  return p;
}

std::int64_t first_of(std::int64_t a, std::int64_t b) {
  return a < 0 ? b : b < 0 ? a : std::min(a, b);
}

} // namespace

comparison compare(const std::vector<double> &out, const std::vector<double> &ref, double rtol,
                   double atol) {
  if (out.size() != ref.size())
    throw invalid_input(
        fmt::format("compare: output has {} elements, reference {}", out.size(), ref.size()));
  comparison c;
  if (out.empty())
    return c;
  const auto n = static_cast<std::int64_t>(out.size());
  const std::int64_t chunk = chunk_for(1);
  // rtol is relative to the output's largest reference magnitude: a column sum over many rows
  // (dgamma, dbeta) cancels, and its fp32 rounding error scales with the terms, not the result.
  std::vector<double> scales(static_cast<std::size_t>((n + chunk - 1) / chunk), 0.0);
  parallel_chunks(n, chunk, [&](std::int64_t i0, std::int64_t i1) {
    double m = 0;
    for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i)
      if (std::isfinite(ref[i]))
        m = std::max(m, std::fabs(ref[i]));
    scales[static_cast<std::size_t>(i0 / chunk)] = m;
  });
  const double scale = *std::max_element(scales.begin(), scales.end());
  const double tolerance = atol + rtol * scale;
  std::vector<compare_part> parts(scales.size());
  parallel_chunks(n, chunk, [&](std::int64_t i0, std::int64_t i1) {
    parts[static_cast<std::size_t>(i0 / chunk)] = compare_chunk(out, ref, tolerance, i0, i1);
  });
  compare_part all;
  for (const compare_part &p : parts) {
    all.max_abs = std::max(all.max_abs, p.max_abs);
    all.max_rel = std::max(all.max_rel, p.max_rel);
    all.unwritten = all.unwritten || p.unwritten;
    all.first_bad = first_of(all.first_bad, p.first_bad);
    all.same = all.same && p.same;
    all.zero = all.zero && p.zero;
    all.ref_zero = all.ref_zero && p.ref_zero;
    all.lo = std::min(all.lo, p.lo);
    all.hi = std::max(all.hi, p.hi);
    all.first_diff = first_of(all.first_diff, p.first_diff);
  }
  c.max_abs_error = all.max_abs;
  c.max_rel_error = all.max_rel;
  c.unwritten = all.unwritten;
  c.passed = all.first_bad < 0;
  c.first_bad = all.first_bad;
  // A constant or all-zero output is not the answer to a reference that varies, whatever atol.
  if (c.passed && out.size() >= 2) {
    const bool varies = all.hi - all.lo > rtol * scale && all.hi > all.lo;
    if ((all.same && varies) || (all.zero && !all.ref_zero)) {
      c.constant = true;
      c.passed = false;
      c.first_bad = std::max<std::int64_t>(all.first_diff, 0);
    }
  }
  return c;
}

} // namespace prereg::reference
