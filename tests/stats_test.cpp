// Tests of the sample statistics against hand-computed values.
#include "base/stats.hpp"
#include "prereg/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace prereg;

TEST_CASE("quantiles use R-7 linear interpolation") {
  SUBCASE("odd n") {
    const std::vector<double> x{3, 1, 2}; // sorted 1 2 3
    CHECK(median(x) == 2.0);
    CHECK(q1(x) == 1.5); // h = 0.5
    CHECK(q3(x) == 2.5); // h = 1.5
    CHECK(iqr(x) == 1.0);
  }
  SUBCASE("even n") {
    const std::vector<double> x{4, 1, 3, 2}; // sorted 1 2 3 4
    CHECK(median(x) == 2.5);                 // h = 1.5
    CHECK(q1(x) == 1.75);                    // h = 0.75
    CHECK(q3(x) == 3.25);                    // h = 2.25
    CHECK(iqr(x) == 1.5);
  }
  SUBCASE("ties") {
    const std::vector<double> x{2, 5, 2, 1, 2}; // sorted 1 2 2 2 5
    CHECK(median(x) == 2.0);
    CHECK(q1(x) == 2.0);
    CHECK(q3(x) == 2.0);
    CHECK(iqr(x) == 0.0);
  }
  SUBCASE("n = 1") {
    const std::vector<double> x{7.25};
    CHECK(median(x) == 7.25);
    CHECK(q1(x) == 7.25);
    CHECK(q3(x) == 7.25);
    CHECK(iqr(x) == 0.0);
  }
  SUBCASE("n = 6, fractional positions") {
    const std::vector<double> x{10, 60, 20, 50, 30, 40};
    CHECK(median(x) == 35.0);        // h = 2.5
    CHECK(q1(x) == 22.5);            // h = 1.25: 20 + 0.25 * 10
    CHECK(q3(x) == 47.5);            // h = 3.75: 40 + 0.75 * 10
    CHECK(quantile(x, 0.1) == 15.0); // h = 0.5
    CHECK(quantile(x, 0.0) == 10.0);
    CHECK(quantile(x, 1.0) == 60.0);
  }
  SUBCASE("no samples gives NaN") {
    const std::vector<double> x;
    CHECK(std::isnan(median(x)));
    CHECK(std::isnan(iqr(x)));
  }
  SUBCASE("p outside [0, 1] is refused") {
    const std::vector<double> x{1, 2};
    CHECK_THROWS_WITH(static_cast<void>(quantile(x, 1.5)),
                      "quantile probability 1.5 outside [0, 1]");
  }
}

TEST_CASE("mean, min and the protocol statistic") {
  const std::vector<double> x{2, 5, 2, 1, 2};
  CHECK(mean(x) == 2.4);
  CHECK(minimum(x) == 1.0);
  CHECK(statistic(x, statistic_kind::median) == 2.0);
  CHECK(statistic(x, statistic_kind::mean) == 2.4);
  CHECK(statistic(x, statistic_kind::min) == 1.0);
  CHECK(statistic_name(statistic_kind::median) == "median");
  CHECK(statistic_name(statistic_kind::mean) == "mean");
  CHECK(statistic_name(statistic_kind::min) == "min");
  SUBCASE("mean is a left-to-right sum") {
    // (0.1 + 0.2) + 0.3 differs from 0.1 + (0.2 + 0.3) in binary64.
    const std::vector<double> y{0.1, 0.2, 0.3};
    CHECK(mean(y) == ((0.1 + 0.2) + 0.3) / 3.0);
  }
  SUBCASE("empty") {
    const std::vector<double> y;
    CHECK(std::isnan(mean(y)));
    CHECK(std::isnan(minimum(y)));
  }
}

TEST_CASE("non-finite samples are refused") {
  const std::vector<double> x{1, std::numeric_limits<double>::quiet_NaN()};
  try {
    static_cast<void>(median(x));
    FAIL("no error");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::invalid);
    CHECK(std::string(e.what()) == "sample 1 is not a finite number");
  }
  const std::vector<double> y{std::numeric_limits<double>::infinity()};
  CHECK_THROWS_AS(static_cast<void>(mean(y)), error);
  CHECK_THROWS_AS(static_cast<void>(spearman_vs_index(y)), error);
}

TEST_CASE("Spearman rho against the repetition index") {
  CHECK(spearman_vs_index(std::vector<double>{1, 2, 3, 4}) == 1.0);
  CHECK(spearman_vs_index(std::vector<double>{4, 3, 2, 1}) == -1.0);
  CHECK(spearman_vs_index(std::vector<double>{5, 5, 5}) == 0.0);
  CHECK(spearman_vs_index(std::vector<double>{5}) == 0.0);
  CHECK(spearman_vs_index(std::vector<double>{}) == 0.0);
  // ranks 3 1 2 vs 1 2 3: cov -1, var 2 and 2.
  CHECK(spearman_vs_index(std::vector<double>{3, 1, 2}) == -0.5);
  // ties: ranks 1.5 1.5 3: cov 1.5, var 1.5 and 2 -> 1.5 / sqrt(3).
  CHECK(spearman_vs_index(std::vector<double>{1, 1, 2}) == doctest::Approx(std::sqrt(3.0) / 2));
  // ranks 1.5 3.5 1.5 3.5: cov 2, var 4 and 5 -> 2 / sqrt(20).
  CHECK(spearman_vs_index(std::vector<double>{10, 20, 10, 20}) ==
        doctest::Approx(2 / std::sqrt(20.0)));
}
