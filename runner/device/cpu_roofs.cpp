// The CPU device's read sweep, write fill and FMA loop (cpu_roofs.hpp).
#include "device/cpu_roofs.hpp"

#include <fmt/format.h>

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace prereg::cpu_roofs {
namespace {

constexpr std::uint64_t fma_iterations = 1u << 20; // about 1 to 4 ms a call on a current core
constexpr int chains = 12; // independent chains: more than FMA latency x FMA ports (4 x 2)

/// acc = acc * a + b converges to b / (1 - a) = 0.1: finite, never subnormal.
constexpr float fma_a = 0.999f;
constexpr float fma_b = 1e-4f;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) float fma_avx512(std::uint64_t iterations) {
  __m512 acc[chains];
  for (int j = 0; j < chains; ++j)
    acc[j] = _mm512_set1_ps(0.01f * static_cast<float>(j + 1));
  const __m512 a = _mm512_set1_ps(fma_a), b = _mm512_set1_ps(fma_b);
  for (std::uint64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < chains; ++j)
      acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  __m512 sum = acc[0];
  for (int j = 1; j < chains; ++j)
    sum = _mm512_add_ps(sum, acc[j]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float out = 0;
  for (const float v : lanes)
    out += v;
  return out;
}

__attribute__((target("avx2,fma"))) float fma_avx2(std::uint64_t iterations) {
  __m256 acc[chains];
  for (int j = 0; j < chains; ++j)
    acc[j] = _mm256_set1_ps(0.01f * static_cast<float>(j + 1));
  const __m256 a = _mm256_set1_ps(fma_a), b = _mm256_set1_ps(fma_b);
  for (std::uint64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < chains; ++j)
      acc[j] = _mm256_fmadd_ps(acc[j], a, b);
  __m256 sum = acc[0];
  for (int j = 1; j < chains; ++j)
    sum = _mm256_add_ps(sum, acc[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float out = 0;
  for (const float v : lanes)
    out += v;
  return out;
}
#endif

/// Without FMA: the compiler's 8-float vectors, a multiply and an add (2 FLOPs) per lane.
float fma_generic(std::uint64_t iterations) {
  using v8 = float __attribute__((vector_size(32)));
  v8 acc[chains];
  for (int j = 0; j < chains; ++j)
    for (int l = 0; l < 8; ++l)
      acc[j][l] = 0.01f * static_cast<float>(j + 1);
  const v8 a = v8{} + fma_a, b = v8{} + fma_b;
  for (std::uint64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < chains; ++j)
      acc[j] = acc[j] * a + b;
  float out = 0;
  for (int j = 0; j < chains; ++j)
    for (int l = 0; l < 8; ++l)
      out += acc[j][l];
  return out;
}

struct fma_kind {
  float (*loop)(std::uint64_t) = nullptr;
  int lanes = 0;
  const char *name = "";
};

fma_kind pick_fma() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f"))
    return {fma_avx512, 16, "AVX-512 vfmadd (16 fp32 lanes)"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {fma_avx2, 8, "AVX2 vfmadd (8 fp32 lanes)"};
#endif
  return {fma_generic, 8, "8-lane fp32 vectors, multiply then add (no FMA instruction used)"};
}

class fma_step final : public compute_step {
public:
  explicit fma_step(fma_kind k) : m_kind(k) {
    method = fmt::format("fp32 loop of {} independent multiply-add chains, {}, one thread", chains,
                         k.name);
    shape = fmt::format("{} iterations x {} chains x {} lanes", fma_iterations, chains, k.lanes);
    flops = fma_iterations * chains * static_cast<std::uint64_t>(k.lanes) * 2;
  }
  void run() override { m_sink = m_kind.loop(fma_iterations); }

private:
  fma_kind m_kind;
  volatile float m_sink = 0;
};

} // namespace

std::uint64_t read_sweep(const void *p, std::size_t bytes) {
  const auto *w = static_cast<const std::uint64_t *>(p);
  std::uint64_t s[8] = {};
  for (std::size_t i = 0; i + 8 <= bytes / 8; i += 8)
    for (int j = 0; j < 8; ++j)
      s[j] += w[i + static_cast<std::size_t>(j)];
  return s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4] ^ s[5] ^ s[6] ^ s[7];
}

void write_fill(void *p, std::size_t bytes) { std::memset(p, 0x5a, bytes); }

stream_methods methods() {
  return {"read-sweep: every 8-byte word summed into eight sums kept in a volatile word, one "
          "thread",
          "memset of the byte 0x5a (glibc streams fills past its threshold with non-temporal "
          "stores), one thread"};
}

std::unique_ptr<compute_step> fp32_fma_step() { return std::make_unique<fma_step>(pick_fma()); }

} // namespace prereg::cpu_roofs
