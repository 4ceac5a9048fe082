// The parent's own bounds on a process that runs outside code (run/parent_bound.hpp;
// docs/engine.md, "The parent's bounds"): what code that writes its own watch page meets.
#include "base/watch.hpp"
#include "engine/measure.hpp"
#include "prereg/error.hpp"
#include "run/parent_bound.hpp"
#include "spec/protocol.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

using namespace prereg;
using detail::parent_bound;

namespace {

/// PREREG_SILENCE_S set to `v` (unset for nullptr) for one scope.
struct silence_env {
  explicit silence_env(const char *v) {
    if (const char *old = std::getenv("PREREG_SILENCE_S"))
      m_old = old, m_had = true;
    if (v != nullptr)
      ::setenv("PREREG_SILENCE_S", v, 1);
    else
      ::unsetenv("PREREG_SILENCE_S");
  }
  ~silence_env() {
    if (m_had)
      ::setenv("PREREG_SILENCE_S", m_old.c_str(), 1);
    else
      ::unsetenv("PREREG_SILENCE_S");
  }
  std::string m_old;
  bool m_had = false;
};

void show_call(watch_page &page, std::int64_t start) {
  page.who.store(0);
  page.started_ns.store(start);
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

} // namespace

TEST_CASE("the silence limit: the larger of the call limit and 60 s, or PREREG_SILENCE_S") {
  {
    const silence_env e(nullptr);
    CHECK(detail::silence_limit_s(2) == 60);
    CHECK(detail::silence_limit_s(600) == 600);
  }
  {
    const silence_env e("2.5");
    CHECK(detail::silence_limit_s(600) == 2.5);
  }
  for (const char *bad : {"0", "-1", "x", "1e9", "nan", "3s"}) {
    const silence_env e(bad);
    try {
      (void)detail::silence_limit_s(2);
      FAIL("PREREG_SILENCE_S=" << bad << " was taken");
    } catch (const error &err) {
      CHECK(err.code() == exit_code::invalid);
      CHECK(err.line().find("(the environment)") != std::string::npos);
    }
  }
}

TEST_CASE("the calls a plan can make grow with its cells, warm-ups and samples") {
  protocol p;
  p.arms.resize(2);
  p.rows = {16};
  p.cols = {256};
  p.passes = {pass_kind::fwd};
  p.measurement.warmup = 1;
  p.measurement.repetitions = 3;
  const std::size_t two = detail::calls_bound(p); // 2 arms x 1 shape x 1 pass
  CHECK(two == 2 * (16 + 8 + 2 * (8 + 1 + warmup_settle_extra + 9)));
  p.rows = {16, 32};
  CHECK(detail::calls_bound(p) > two); // 4 cells
  p.rows = {16};
  p.measurement.repetitions = 100;
  CHECK(detail::calls_bound(p) >= 2 * 300);
}

TEST_CASE("an honest sequence of calls, with short gaps between them, keeps within the bounds") {
  shared_watch_page shared;
  watch_page &page = shared.page();
  parent_bound b(0.2, 10);
  for (int i = 0; i < 10; ++i) {
    show_call(page, monotonic_ns());
    CHECK(b.check(page).empty());
    CHECK(b.check(page).empty()); // the same call seen twice counts once
    page.started_ns.store(0);
    CHECK(b.check(page).empty()); // a gap shorter than the limit
  }
  sleep_s(0.1);
  b.heard();
  sleep_s(0.15); // 0.25 s since the last call, 0.15 s since the last message
  CHECK(b.check(page).empty());
}

TEST_CASE("a page cleared for longer than the silence limit ends the process") {
  shared_watch_page shared;
  watch_page &page = shared.page();
  parent_bound b(0.05, 10);
  show_call(page, monotonic_ns());
  CHECK(b.check(page).empty());
  page.started_ns.store(0); // cleared by code inside the process, which then never returns
  sleep_s(0.2);
  const std::string why = b.check(page);
  CHECK(why.find("showed no call of outside code and sent nothing") != std::string::npos);
}

TEST_CASE("a start rewritten on the page ends the process") {
  shared_watch_page shared;
  watch_page &page = shared.page();
  SUBCASE("fresh starts, more than the plan's calls") {
    parent_bound b(60, 5);
    std::string why;
    for (int i = 0; i < 6 && why.empty(); ++i) {
      show_call(page, monotonic_ns());
      why = b.check(page);
    }
    CHECK(why.find("more calls of outside code than its plan can make (5") != std::string::npos);
  }
  SUBCASE("a start before the previous one") {
    parent_bound b(60, 5);
    const std::int64_t now = monotonic_ns();
    show_call(page, now);
    CHECK(b.check(page).empty());
    show_call(page, now - 1000);
    CHECK(b.check(page).find("started before the previous call") != std::string::npos);
  }
  SUBCASE("a start after the parent's now") {
    parent_bound b(60, 5);
    show_call(page, monotonic_ns() + 3'600'000'000'000);
    CHECK(b.check(page).find("started after the parent's now") != std::string::npos);
  }
}

TEST_CASE("silence counts only while the parent listens: a parent away counts from its return") {
  shared_watch_page shared;
  watch_page &page = shared.page();
  parent_bound b(0.5, 10);
  CHECK(b.check(page).empty());
  sleep_s(1.2); // the parent busy elsewhere (the ledger, the store's lock): not the process's
  CHECK(b.check(page).empty());
  std::string why;
  for (int i = 0; i < 40 && why.empty(); ++i) { // then listening, every 50 ms
    sleep_s(0.05);
    why = b.check(page);
  }
  CHECK(why.find("sent nothing") != std::string::npos);
}
