// The watched calls' shared page (watch.hpp).
#include "base/watch.hpp"

#include "base/process.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <ctime>
#include <new>

namespace prereg {
namespace {

watch_page *g_page = nullptr; ///< this process's page (set in the watched process only)
int g_depth = 0;              ///< watched calls open now (the engine calls from one thread)

} // namespace

shared_watch_page::shared_watch_page() {
  void *p = ::mmap(nullptr, sizeof(watch_page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
  if (p == MAP_FAILED)
    throw process_error("mmap", errno);
  m_page = new (p) watch_page();
}

shared_watch_page::~shared_watch_page() {
  m_page->~watch_page();
  ::munmap(m_page, sizeof(watch_page));
}

std::optional<watched_call_state> call_in_progress(const watch_page &page) {
  for (int tries = 0; tries < 3; ++tries) {
    const std::int64_t start = page.started_ns.load(std::memory_order_acquire);
    if (start == 0)
      return std::nullopt;
    watched_call_state s{start, page.who.load(std::memory_order_relaxed),
                         page.where.load(std::memory_order_relaxed),
                         page.what.load(std::memory_order_relaxed)};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (page.started_ns.load(std::memory_order_relaxed) == start)
      return s;
  }
  return std::nullopt; // changing under us: calls are returning
}

void watch_attach(watch_page *page) { g_page = page; }

watched_call::watched_call(int who, int where, int what) {
  if (g_page == nullptr || g_depth++ > 0)
    return;
  m_outer = true;
  g_page->started_ns.store(0, std::memory_order_relaxed);
  g_page->who.store(who, std::memory_order_relaxed);
  g_page->where.store(where, std::memory_order_relaxed);
  g_page->what.store(what, std::memory_order_relaxed);
  g_page->started_ns.store(monotonic_ns(), std::memory_order_release);
}

watched_call::~watched_call() {
  if (g_page == nullptr)
    return;
  --g_depth;
  if (m_outer)
    g_page->started_ns.store(0, std::memory_order_release);
}

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

} // namespace prereg
