// The deterministic generator behind arm order, random inputs and the bootstrap:
// xoshiro256** seeded through SplitMix64 from a 64-bit seed (README: "Determinism").
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace prereg {

/// xoshiro256** 1.0 (Blackman & Vigna), state filled by SplitMix64 from the seed.
class rng {
public:
  explicit rng(std::uint64_t seed) noexcept {
    for (auto &s : m_state) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  /// The next 64 random bits.
  std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(m_state[1] * 5, 7) * 9;
    const std::uint64_t t = m_state[1] << 17;
    m_state[2] ^= m_state[0];
    m_state[3] ^= m_state[1];
    m_state[1] ^= m_state[2];
    m_state[0] ^= m_state[3];
    m_state[2] ^= t;
    m_state[3] = rotl(m_state[3], 45);
    return result;
  }
  /// Uniform integer in [0, n) by rejection (no modulo bias); n > 0.
  std::uint64_t below(std::uint64_t n) noexcept {
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t x;
    do {
      x = next();
    } while (x >= limit);
    return x % n;
  }
  /// Uniform double in [0, 1) from the top 53 bits.
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::array<std::uint64_t, 4> m_state{};
};

/// The seed of a protocol: its hash's first 16 hex digits read as a big-endian uint64.
[[nodiscard]] inline std::uint64_t seed_from_hash(std::string_view hex_hash) noexcept {
  std::uint64_t seed = 0;
  for (std::size_t i = 0; i < 16 && i < hex_hash.size(); ++i) {
    const char c = hex_hash[i];
    const std::uint64_t v = (c >= '0' && c <= '9')   ? c - '0'
                            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                                     : 0;
    seed = (seed << 4) | v;
  }
  return seed;
}

/// Seeds for separate streams (arm order, inputs, bootstrap) derived from one protocol seed.
enum class stream_id : std::uint64_t { arm_order = 1, inputs = 2, bootstrap = 3 };
[[nodiscard]] inline std::uint64_t stream_seed(std::uint64_t seed, stream_id id) noexcept {
  return seed ^ (static_cast<std::uint64_t>(id) * 0xd1b54a32d192ed03ULL);
}

} // namespace prereg
