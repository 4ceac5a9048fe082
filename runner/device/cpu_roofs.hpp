// The CPU device's roofs (docs/cpu.md, "The roofs"): a read sweep, a write-only fill and an
// FMA-bound loop, each on the calling thread (one core, as the CPU arms and the copy ceiling).
#pragma once

#include "device/device.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace prereg::cpu_roofs {

/// Reads every 8-byte word of `bytes` (a multiple of 64) at `p` into eight sums and returns
/// their XOR, which the caller keeps: no load can be left out.
[[nodiscard]] std::uint64_t read_sweep(const void *p, std::size_t bytes);
/// Writes the byte 0x5a over `bytes` at `p` with memset (glibc streams large fills with
/// non-temporal stores, so the lines are not read first).
void write_fill(void *p, std::size_t bytes);
/// What the two run, for instrument.roofs (read, write).
[[nodiscard]] stream_methods methods();

/// The fp32 compute ceiling's step: a loop of independent multiply-add chains in the widest
/// vectors this core has (AVX-512 with FMA, AVX2 with FMA, else the compiler's vectors without
/// a fused multiply-add), 2 FLOPs per lane and iteration.
[[nodiscard]] std::unique_ptr<compute_step> fp32_fma_step();

} // namespace prereg::cpu_roofs
