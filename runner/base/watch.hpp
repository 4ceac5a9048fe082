// A page of memory shared with a forked process through which that process says which call it
// is in, so that a watchdog in another process can tell a call that does not return
// (docs/engine.md, "The watchdog"). No prereg concept: a call is three small integers (who,
// where, what) and its start on CLOCK_MONOTONIC.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace prereg {

/// The page's contents: written by the watched process, read by the watchdog.
struct watch_page {
  std::atomic<std::int64_t> started_ns{
      0};                              ///< CLOCK_MONOTONIC start of the call in progress; 0: none
  std::atomic<std::int32_t> who{-1};   ///< e.g. an arm's index
  std::atomic<std::int32_t> where{-1}; ///< e.g. a cell's index
  std::atomic<std::int32_t> what{0};   ///< e.g. a phase's code
};

/// A watch_page in a MAP_SHARED anonymous mapping: shared with every process forked after it
/// was made (and their forks), unmapped when it goes. Throws process_error("mmap") when none.
class shared_watch_page {
public:
  shared_watch_page();
  ~shared_watch_page();
  shared_watch_page(const shared_watch_page &) = delete;
  shared_watch_page &operator=(const shared_watch_page &) = delete;
  [[nodiscard]] watch_page &page() const { return *m_page; }

private:
  watch_page *m_page;
};

/// One call as the watchdog reads it.
struct watched_call_state {
  std::int64_t started_ns = 0;
  int who = -1, where = -1, what = 0;
};

/// The call in progress on `page`, or nullopt when none is.
[[nodiscard]] std::optional<watched_call_state> call_in_progress(const watch_page &page);

/// The page this process reports its calls on (null: none, and watched_call costs nothing).
void watch_attach(watch_page *page);

/// Marks one call on the attached page for its lifetime. Calls nest: an inner one leaves the
/// outermost call's start and names in place.
class watched_call {
public:
  watched_call(int who, int where, int what);
  ~watched_call();
  watched_call(const watched_call &) = delete;
  watched_call &operator=(const watched_call &) = delete;

private:
  bool m_outer = false;
};

/// Now on CLOCK_MONOTONIC [ns] (the same clock in every process of the machine).
[[nodiscard]] std::int64_t monotonic_ns();

} // namespace prereg
