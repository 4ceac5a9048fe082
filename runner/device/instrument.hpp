// The instrument's own device kernels (cache flush and read ceiling, write ceiling, empty step,
// clock probe, input fill),
// callable from host C++ in kernels/cuda.
#pragma once

#include "prereg/arm.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace prereg::cuda {

/// Byte every flush-buffer byte holds (set once with cudaMemset when it is allocated).
inline constexpr int flush_fill_byte = 0x5a;

/// Reads all `bytes` (a multiple of 16) of `buffer` through L2 and writes one word to `sink`
/// only if the data differ from flush_fill_byte, which never happens: a read-only L2 flush.
void launch_read_sweep(const void *buffer, std::size_t bytes, unsigned long long *sink,
                       int sm_count, cudaStream_t stream);

/// Writes the byte flush_fill_byte over all `bytes` (a multiple of 16) of `buffer` with
/// 16-byte stores and reads nothing: the write ceiling's step (a later launch_read_sweep of the
/// same buffer is then the read ceiling's, its sink never written).
void launch_write_fill(void *buffer, std::size_t bytes, int sm_count, cudaStream_t stream);

/// An empty kernel (<<<1, 1>>>): the launch floor's step.
void launch_empty(cudaStream_t stream);

/// The kernel clock's marks (<<<1, 1>>> empty kernels named prereg_window_open and
/// prereg_window_close) queued around a timed window.
void launch_window_mark(bool open, cudaStream_t stream);

/// A region's marks (prereg_region_open / prereg_region_close, <<<1, 1>>> empty kernels),
/// queued by a Python arm's `with t.region(label)` while the kernel clock is on.
void launch_region_mark(bool open, cudaStream_t stream);

/// What the driver loaded for this build's kernels on the current device (all .cu files share
/// one set of targets): the binary's SASS architecture and the PTX it came from, as 10*major +
/// minor (cudaFuncGetAttributes of the empty kernel).
struct loaded_code {
  int binary_version = 0;
  int ptx_version = 0;
};
[[nodiscard]] loaded_code loaded_code_of_kernels();

/// One thread spins for `interval_ns` of %globaltimer and writes {clock64 cycles, ns} to out.
void launch_clock_probe(unsigned long long *out, std::uint64_t interval_ns, cudaStream_t stream);

/// Fills n elements of `type` with lo + (hi - lo) * u, u uniform in [0, 1) from a hash of
/// (seed, index); with cols > 0 each row of `cols` elements gets an extra offset uniform in
/// [-row_offset, row_offset]. Never zeros only.
void launch_fill_uniform(void *p, std::size_t n, dtype type, float lo, float hi, std::uint64_t seed,
                         std::int64_t cols, float row_offset, cudaStream_t stream);

/// Writes the `width`-byte (1, 2, 4 or 8) pattern `bits` (its low `width` bytes) into n elements
/// at p (the poison of docs/engine.md).
void launch_fill_pattern(void *p, std::size_t n, std::size_t width, std::uint64_t bits,
                         cudaStream_t stream);

} // namespace prereg::cuda
