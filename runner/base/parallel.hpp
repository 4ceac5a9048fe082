// Work split over the host's cores in fixed chunks (docs/engine.md, "What is computed where"):
// the chunks do not depend on the thread count, so a loop whose chunks write disjoint elements
// gives the same bytes with one thread or many.
#pragma once

#include <cstdint>
#include <functional>

namespace prereg {

/// Threads host loops use: set_host_threads()'s value, else PREREG_HOST_THREADS, else every
/// core (std::thread::hardware_concurrency, at least 1).
[[nodiscard]] int host_threads();
/// Overrides host_threads() (0: back to the default). Tests compare 1 thread with many.
void set_host_threads(int n);

/// Calls body(begin, end) for the chunks [k*chunk, min((k+1)*chunk, n)) of [0, n), on up to
/// host_threads() threads (the caller's among them). Each chunk runs on one thread, in
/// ascending order within that thread; an exception from a body is rethrown (the first chunk's
/// that threw) once every thread has stopped.
void parallel_chunks(std::int64_t n, std::int64_t chunk,
                     const std::function<void(std::int64_t, std::int64_t)> &body);

/// A chunk of roughly `target` work units whose items cost `per_item` units each (at least 1).
[[nodiscard]] std::int64_t chunk_for(std::int64_t per_item, std::int64_t target = 1 << 18);

} // namespace prereg
