// The calling thread's time as the kernel accounts it (sched.hpp).
#include "base/sched.hpp"

#include "base/watch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace prereg {
namespace {

std::atomic<std::uint64_t> g_continues{0};
std::atomic<bool> g_counting{false};

extern "C" void on_continue(int) { g_continues.fetch_add(1, std::memory_order_relaxed); }

/// The second field of /proc/thread-self/schedstat [ns], or -1.
std::int64_t run_delay_ns() {
  thread_local int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  char buf[128];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  char *end = nullptr;
  (void)std::strtoull(buf, &end, 10); // time on the CPU
  if (end == buf)
    return -1;
  char *second = end;
  const unsigned long long delay = std::strtoull(second, &end, 10);
  if (end == second)
    return -1;
  return static_cast<std::int64_t>(delay);
}

} // namespace

void count_continues() {
  if (g_counting.exchange(true))
    return;
  struct sigaction sa {};
  sa.sa_handler = on_continue;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGCONT, &sa, nullptr);
}

sched_reading read_sched() {
  sched_reading r;
  r.continues = g_continues.load(std::memory_order_relaxed);
  r.run_delay_ns = run_delay_ns();
  r.wall_ns = monotonic_ns();
  return r;
}

} // namespace prereg
