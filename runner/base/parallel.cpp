// Fixed-chunk host parallelism (parallel.hpp).
#include "base/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace prereg {
namespace {

std::atomic<int> g_threads{0};

int default_threads() {
  if (const char *env = std::getenv("PREREG_HOST_THREADS")) {
    char *end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1 && v <= 4096)
      return static_cast<int>(v);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

int host_threads() {
  const int n = g_threads.load();
  return n > 0 ? n : default_threads();
}

void set_host_threads(int n) { g_threads.store(std::max(0, n)); }

std::int64_t chunk_for(std::int64_t per_item, std::int64_t target) {
  return std::max<std::int64_t>(1, target / std::max<std::int64_t>(1, per_item));
}

void parallel_chunks(std::int64_t n, std::int64_t chunk,
                     const std::function<void(std::int64_t, std::int64_t)> &body) {
  if (n <= 0)
    return;
  chunk = std::max<std::int64_t>(1, chunk);
  const std::int64_t chunks = (n + chunk - 1) / chunk;
  const auto workers = static_cast<std::int64_t>(std::min<std::int64_t>(host_threads(), chunks));
  std::atomic<std::int64_t> next{0};
  std::mutex failed_mutex;
  std::exception_ptr failed;
  std::int64_t failed_chunk = chunks;
  auto work = [&] {
    for (;;) {
      const std::int64_t k = next.fetch_add(1);
      if (k >= chunks)
        return;
      try {
        body(k * chunk, std::min(n, (k + 1) * chunk));
      } catch (...) {
        const std::lock_guard lock(failed_mutex);
        if (k < failed_chunk) {
          failed_chunk = k;
          failed = std::current_exception();
        }
        next.store(chunks); // no further chunk starts
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(workers > 0 ? workers - 1 : 0));
  for (std::int64_t w = 1; w < workers; ++w)
    pool.emplace_back(work);
  work();
  for (auto &t : pool)
    t.join();
  if (failed)
    std::rethrow_exception(failed);
}

} // namespace prereg
