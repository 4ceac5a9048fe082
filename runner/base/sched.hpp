// What the kernel says about the calling thread's time: the host clock, its run delay (time
// it was runnable but not running, /proc/thread-self/schedstat) and how many times this process
// was continued after a stop (SIGCONT, counted by a handler). No prereg concept.
#pragma once

#include <cstdint>

namespace prereg {

/// One reading; differences of two readings bracket an interval.
struct sched_reading {
  std::int64_t wall_ns = 0;       ///< CLOCK_MONOTONIC
  std::int64_t run_delay_ns = -1; ///< the thread's run delay so far (-1: the kernel does not say)
  std::uint64_t continues = 0;    ///< SIGCONTs this process received since count_continues()
};

/// Installs the SIGCONT handler that counts continues (SA_RESTART; once per process).
void count_continues();

/// Now. Costs two clock reads and one pread of an open descriptor (opened on first use per
/// thread).
[[nodiscard]] sched_reading read_sched();

} // namespace prereg
