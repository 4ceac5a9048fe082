// The kernel clock's records cut into windows and regions (device/kernel_windows.hpp).
#include "device/kernel_windows.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace prereg;

namespace {

// Names as the device reports them: mangled, in an anonymous namespace.
const char *const WO = "_ZN12_GLOBAL__N_118prereg_window_openEv";
const char *const WC = "_ZN12_GLOBAL__N_119prereg_window_closeEv";
const char *const RO = "_ZN12_GLOBAL__N_118prereg_region_openEv";
const char *const RC = "_ZN12_GLOBAL__N_119prereg_region_closeEv";
const char *const K1 = "_Z2k1v";
const char *const K2 = "_Z2k2v";

std::string same(const char *n) { return n; }

constexpr std::uint64_t us = 1000; // ns

} // namespace

TEST_CASE("mark_of knows the four marks and nothing else") {
  CHECK(mark_of(WO) == mark_kind::window_open);
  CHECK(mark_of(WC) == mark_kind::window_close);
  CHECK(mark_of(RO) == mark_kind::region_open);
  CHECK(mark_of(RC) == mark_kind::region_close);
  CHECK(mark_of(K1) == mark_kind::none);
  CHECK(mark_of("prereg_window") == mark_kind::none);
  CHECK(mark_of(nullptr) == mark_kind::none);
}

TEST_CASE("segment_windows: kernels inside the marks, their union, names, leftovers") {
  // Given out of order: the function sorts by start.
  std::vector<kernel_event> ev = {
      {12 * us, 15 * us, K2}, {0, 1 * us, WO},        {2 * us, 6 * us, K1},
      {4 * us, 8 * us, K1},   {20 * us, 21 * us, WC}, {30 * us, 31 * us, WO},
      {32 * us, 33 * us, K2}, {34 * us, 35 * us, WC}, {40 * us, 41 * us, K1}, // after: kept
  };
  const auto w = segment_windows(ev, same);
  REQUIRE(w.size() == 2);
  CHECK(w[0].count == 3);
  CHECK(w[0].kernel_ms == doctest::Approx(0.009)); // [2, 8] and [12, 15]: 6 + 3 us
  REQUIRE(w[0].names.size() == 2);
  CHECK(w[0].names[0].name == K1); // first-start order
  CHECK(w[0].names[0].calls == 2);
  CHECK(w[0].names[0].ms == doctest::Approx(0.008)); // summed durations, not the union
  CHECK(w[1].count == 1);
  CHECK(w[1].kernel_ms == doctest::Approx(0.001));
  CHECK(w[0].region_kernel_ms.empty());
  CHECK(w[0].regions_ok);
  REQUIRE(ev.size() == 1); // the record after the last window stays for the next call
  CHECK(ev[0].start == 40 * us);
}

TEST_CASE("segment_windows: counts the window's kernels that ran as graph nodes") {
  std::vector<kernel_event> ev = {
      {0, 1 * us, WO},        {2 * us, 3 * us, K1, true}, {4 * us, 5 * us, K1, true},
      {6 * us, 7 * us, K2},   {8 * us, 9 * us, WC},       {10 * us, 11 * us, WO},
      {12 * us, 13 * us, K2}, {14 * us, 15 * us, WC},     {16 * us, 17 * us, K1, true},
  };
  const auto w = segment_windows(ev, same);
  REQUIRE(w.size() == 2);
  CHECK(w[0].count == 3);
  CHECK(w[0].graph_count == 2);
  CHECK(w[1].count == 1);
  CHECK(w[1].graph_count == 0); // the graph kernel after the last window is no window's
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].graph);
}

TEST_CASE("segment_windows: no window at all drops the records") {
  std::vector<kernel_event> ev = {{0, 1 * us, K1}, {2 * us, 3 * us, K2}};
  CHECK(segment_windows(ev, same).empty());
  CHECK(ev.empty());
}

TEST_CASE("segment_windows: regions pair like brackets, in open order, nested ones in both") {
  std::vector<kernel_event> ev = {
      {0, 1 * us, WO},        {2 * us, 3 * us, RO}, // region 0 "outer"
      {4 * us, 6 * us, K1},                         // in 0
      {7 * us, 8 * us, RO},                         // region 1 "inner"
      {9 * us, 12 * us, K2},                        // in 0 and 1
      {13 * us, 14 * us, RC},                       // closes 1
      {15 * us, 16 * us, RC},                       // closes 0
      {17 * us, 18 * us, K1},                       // in the window, in no region
      {19 * us, 20 * us, RO},                       // region 2
      {21 * us, 25 * us, K2}, {26 * us, 27 * us, RC}, {30 * us, 31 * us, WC},
  };
  const auto w = segment_windows(ev, same);
  REQUIRE(w.size() == 1);
  CHECK(w[0].regions_ok);
  CHECK(w[0].count == 4); // the region marks are the instrument's, not the arm's kernels
  CHECK(w[0].kernel_ms == doctest::Approx(0.002 + 0.003 + 0.001 + 0.004));
  REQUIRE(w[0].region_kernel_ms.size() == 3);
  CHECK(w[0].region_kernel_ms[0] == doctest::Approx(0.005));
  CHECK(w[0].region_kernel_ms[1] == doctest::Approx(0.003));
  CHECK(w[0].region_kernel_ms[2] == doctest::Approx(0.004));
  for (const auto &n : w[0].names)
    CHECK(mark_of(n.name.c_str()) == mark_kind::none);
}

TEST_CASE(
    "segment_windows: a region without its close, or a close without its open, is no region") {
  std::vector<kernel_event> open_only = {
      {0, 1 * us, WO}, {2 * us, 3 * us, RO}, {4 * us, 5 * us, K1}, {6 * us, 7 * us, WC}};
  auto w = segment_windows(open_only, same);
  REQUIRE(w.size() == 1);
  CHECK_FALSE(w[0].regions_ok);
  CHECK(w[0].region_kernel_ms.empty());
  CHECK(w[0].kernel_ms == doctest::Approx(0.001)); // the window's own account stands
  std::vector<kernel_event> close_only = {
      {0, 1 * us, WO}, {4 * us, 5 * us, K1}, {5 * us, 6 * us, RC}, {6 * us, 7 * us, WC}};
  w = segment_windows(close_only, same);
  REQUIRE(w.size() == 1);
  CHECK_FALSE(w[0].regions_ok);
}

TEST_CASE("segment_windows: region marks outside every window belong to no window") {
  std::vector<kernel_event> ev = {{0, 1 * us, RO},
                                  {2 * us, 3 * us, RC},
                                  {4 * us, 5 * us, WO},
                                  {6 * us, 7 * us, K1},
                                  {8 * us, 9 * us, WC}};
  const auto w = segment_windows(ev, same);
  REQUIRE(w.size() == 1);
  CHECK(w[0].regions_ok);
  CHECK(w[0].region_kernel_ms.empty());
}

TEST_CASE("region_kernel_sums: labels in entry order name the clock's regions") {
  const auto s = region_kernel_sums({"attention", "mlp", "attention"}, {1.0, 2.0, 0.5});
  REQUIRE(s);
  CHECK(s->at("attention") == doctest::Approx(1.5));
  CHECK(s->at("mlp") == doctest::Approx(2.0));
  CHECK_FALSE(region_kernel_sums({"attention"}, {1.0, 2.0}));
  CHECK_FALSE(region_kernel_sums({"attention", "mlp"}, {1.0}));
  const auto none = region_kernel_sums({}, {});
  REQUIRE(none);
  CHECK(none->empty());
}
