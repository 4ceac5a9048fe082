// Tests of the `expect` expression language: each grammar rule, evaluation and each error.
#include "base/expr.hpp"
#include "prereg/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>

using prereg::expectation;
using prereg::metric;
using prereg::metric_ref;

namespace {

const std::vector<std::string> arm_ids{"fused", "unfused", "a-b", "b", "lock1"};
const std::string where = "p.yaml:37:13";

expectation parse(std::string_view text) { return expectation::parse(text, arm_ids, where); }

// Values per (metric, arm): time = base, the other metrics derived so every metric differs.
struct values {
  std::map<std::string, double> time;
  [[nodiscard]] double operator()(const metric_ref &r) const {
    const double t = time.at(r.arm);
    switch (r.what) {
    case metric::time:
      return t;
    case metric::peak_mb:
      return 1000 * t;
    case metric::gbps:
      return 100 / t;
    case metric::pct_ceiling:
      return 10 * t;
    case metric::share:
      return r.label == "attn" ? 40 : 5;
    case metric::kernel_share:
      return r.label == "attn" ? 10 : 2;
    }
    return 0;
  }
};

bool holds(std::string_view text, std::map<std::string, double> time) {
  return parse(text).holds(values{std::move(time)});
}

// The error parsing `text` raises; fails the test if it parses.
std::optional<prereg::error> parse_error(std::string_view text) {
  try {
    (void)parse(text);
  } catch (const prereg::error &e) {
    return e;
  }
  return std::nullopt;
}

void check_rejects(std::string_view text, const std::string &message) {
  CAPTURE(text);
  const auto e = parse_error(text);
  REQUIRE(e.has_value());
  CHECK(e->code() == prereg::exit_code::invalid);
  CHECK(e->where() == where);
  CHECK(std::string(e->what()) == message);
}

} // namespace

TEST_CASE("an arm alone means time(arm)") {
  const auto e = parse("fused > unfused");
  REQUIRE(e.references().size() == 2);
  CHECK(e.references()[0] == metric_ref{metric::time, "fused"});
  CHECK(e.references()[1] == metric_ref{metric::time, "unfused"});
  CHECK(holds("fused > unfused", {{"fused", 2}, {"unfused", 1}}));
  CHECK_FALSE(holds("fused > unfused", {{"fused", 1}, {"unfused", 2}}));
  CHECK(parse("time(fused) > unfused").references() == e.references());
}

TEST_CASE("functions read their metric of an arm") {
  const std::map<std::string, double> t{{"fused", 2}, {"unfused", 4}};
  SUBCASE("time") { CHECK(holds("time(fused) < 2.5", t)); }
  SUBCASE("peak_mb") {
    CHECK(holds("peak_mb(fused) >= 2000", t));
    CHECK_FALSE(holds("peak_mb(fused) > 2000", t));
  }
  SUBCASE("gbps") { CHECK(holds("gbps(fused) > gbps(unfused)", t)); }
  SUBCASE("pct_ceiling") { CHECK(holds("pct_ceiling(unfused) <= 40", t)); }
  SUBCASE("references are distinct, in first-use order") {
    const auto e = parse("gbps(fused) > gbps(unfused) and fused < unfused and gbps(fused) > 1");
    REQUIRE(e.references().size() == 4);
    CHECK(e.references()[0] == metric_ref{metric::gbps, "fused"});
    CHECK(e.references()[1] == metric_ref{metric::gbps, "unfused"});
    CHECK(e.references()[2] == metric_ref{metric::time, "fused"});
    CHECK(e.references()[3] == metric_ref{metric::time, "unfused"});
    CHECK(e.arms() == std::vector<std::string>{"fused", "unfused"});
  }
  CHECK(prereg::to_string(metric::pct_ceiling) == "pct_ceiling");
  CHECK(prereg::to_string(metric::peak_mb) == "peak_mb");
}

TEST_CASE("comparison operators") {
  const std::map<std::string, double> eq{{"fused", 1}, {"unfused", 1}};
  CHECK_FALSE(holds("fused < unfused", eq));
  CHECK(holds("fused <= unfused", eq));
  CHECK_FALSE(holds("fused > unfused", eq));
  CHECK(holds("fused >= unfused", eq));
  CHECK(holds("fused<unfused", {{"fused", 0.5}, {"unfused", 1}}));
}

TEST_CASE("numbers") {
  const std::map<std::string, double> t{{"fused", 1.3}};
  CHECK(holds("fused >= 1.3", t));
  CHECK_FALSE(holds("fused > 1.3", t));
  CHECK(holds("fused * 0.003 < 0.0040", t));
  CHECK(holds("fused * 1e-3 < 0.0014 and fused * 1E+3 > 1299", t));
  CHECK(holds("fused < 13e-1 + 0.001", t));
  CHECK(holds("fused > 0 and 1 < 2", t)); // constant comparisons are allowed
}

TEST_CASE("precedence and associativity") {
  const std::map<std::string, double> t{{"fused", 10}, {"unfused", 4}};
  SUBCASE("* binds tighter than +") {
    CHECK(holds("fused - unfused * 2 >= 2 and fused - unfused * 2 <= 2", t));
  }
  SUBCASE("- is left-associative") {
    CHECK(holds("fused - unfused - 1 >= 5 and fused - unfused - 1 <= 5", t));
  }
  SUBCASE("/ is left-associative") { CHECK(holds("fused / 5 / 2 >= 1 and fused / 5 / 2 <= 1", t)); }
  SUBCASE("parentheses") {
    CHECK(holds("(fused - unfused) * 2 >= 12 and (fused - unfused) * 2 <= 12", t));
  }
  SUBCASE("unary minus") {
    CHECK(holds("-fused < 0", t));
    CHECK(holds("- -fused > 0", t));
    CHECK(holds("-fused * 2 <= -20 and -fused * 2 >= -20", t));
    CHECK(holds("unfused - -fused >= 14", t));
  }
  SUBCASE("abs of a sum") {
    CHECK(holds("abs(unfused - fused) >= 6 and abs(unfused - fused) <= 6", t));
    CHECK(holds("abs(-1) > 0.5", t));
    CHECK(holds("abs(fused - unfused) / unfused < 1.6", t));
  }
}

TEST_CASE("and requires every comparison") {
  const std::map<std::string, double> t{{"fused", 2}, {"unfused", 1}};
  CHECK(holds("fused > unfused and fused < 3", t));
  CHECK_FALSE(holds("fused > unfused and fused < 1", t));
  CHECK_FALSE(holds("fused < unfused and fused < 3", t));
  CHECK(holds("fused > 1 and fused > 1 and unfused > 0", t));
}

TEST_CASE("arm ids with dashes and digits") {
  const std::map<std::string, double> t{
      {"fused", 3}, {"unfused", 1}, {"a-b", 5}, {"b", 2}, {"lock1", 7}};
  SUBCASE("a dashed arm id is one token") {
    const auto e = parse("a-b > b");
    REQUIRE(e.references().size() == 2);
    CHECK(e.references()[0].arm == "a-b");
    CHECK(holds("a-b > b", t));
  }
  SUBCASE("a dash between two arms is a minus") {
    const auto e = parse("fused-unfused > 1");
    REQUIRE(e.references().size() == 2);
    CHECK(e.arms() == std::vector<std::string>{"fused", "unfused"});
    CHECK(holds("fused-unfused >= 2 and fused-unfused <= 2", t));
  }
  SUBCASE("the longest arm id wins") { CHECK(holds("a-b-b >= 3 and a-b-b <= 3", t)); }
  SUBCASE("digits in an arm id") { CHECK(holds("lock1 > 6", t)); }
}

TEST_CASE("runtime division follows IEEE") {
  const auto e = parse("fused / unfused > 1");
  CHECK(e.holds(values{{{"fused", 1}, {"unfused", 0}}}));       // +inf > 1
  CHECK_FALSE(e.holds(values{{{"fused", 0}, {"unfused", 0}}})); // NaN > 1 is false
  const auto nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(parse("fused <= unfused").holds([&](const metric_ref &) { return nan; }));
  CHECK_FALSE(parse("fused > unfused").holds([&](const metric_ref &) { return nan; }));
}

TEST_CASE("holds asks once per reference") {
  const auto e = parse("fused > unfused and fused < 2 * unfused and fused > 0");
  int calls = 0;
  CHECK(e.holds([&](const metric_ref &r) {
    ++calls;
    return r.arm == "fused" ? 3.0 : 2.0;
  }));
  CHECK(calls == 2);
}

TEST_CASE("errors carry the caller's where and the offset") {
  SUBCASE("empty input") {
    check_rejects("", "empty expression at offset 0");
    check_rejects("   ", "empty expression at offset 0");
  }
  SUBCASE("unknown identifier") {
    check_rejects("fused > slow",
                  "unknown identifier 'slow' (arms: fused, unfused, a-b, b, lock1) at offset 8");
    check_rejects("Fused > unfused",
                  "unknown identifier 'Fused' (arms: fused, unfused, a-b, b, lock1; did you mean "
                  "'fused'?) at offset 0");
    check_rejects("fused > un-known", "unknown identifier 'un-known' (arms: fused, unfused, a-b, "
                                      "b, lock1) at offset 8");
  }
  SUBCASE("unknown function") {
    check_rejects("median(fused) > 1",
                  "unknown function 'median' (functions: time, peak_mb, gbps, pct_ceiling, "
                  "kernel_time, gap_share, kernels, share, kernel_share, tflops, pct_compute, "
                  "pct_roof, abs) at offset 0");
    check_rejects("fused(unfused) > 1", "'fused' is an arm, not a function at offset 0");
  }
  SUBCASE("a function applied to a non-arm") {
    check_rejects(
        "time(1) > 0",
        "time() takes an arm id, got '1' (arms: fused, unfused, a-b, b, lock1) at offset 5");
    check_rejects("gbps(abs(fused)) > 0", "gbps() takes an arm id, got 'abs' (arms: fused, "
                                          "unfused, a-b, b, lock1) at offset 5");
    check_rejects("peak_mb(fused + unfused) > 0", "expected ')', got '+' at offset 14");
    check_rejects("pct_ceiling fused > 0",
                  "expected '(' after pct_ceiling, got 'fused' at offset 12");
    check_rejects(
        "time() > 0",
        "time() takes an arm id, got ')' (arms: fused, unfused, a-b, b, lock1) at offset 5");
    check_rejects("time(fussed) > 0", "time() takes an arm id, got 'fussed' (arms: fused, unfused, "
                                      "a-b, b, lock1; did you mean 'fused'?) at offset 5");
  }
  SUBCASE("division by a literal or constant zero") {
    check_rejects("fused / 0 > 1", "division by a constant zero at offset 8");
    check_rejects("fused / -0 > 1", "division by a constant zero at offset 8");
    check_rejects("fused / (0) > 1", "division by a constant zero at offset 8");
    check_rejects("fused / (-(0.0)) > 1", "division by a constant zero at offset 8");
    check_rejects("fused / 0e5 > 1", "division by a constant zero at offset 8");
    check_rejects("fused / (1 - 1) > 1", "division by a constant zero at offset 8");
    check_rejects("fused > unfused / abs(0)", "division by a constant zero at offset 18");
    CHECK_FALSE(parse_error("fused / (unfused - unfused) > 1")); // not constant: runtime IEEE
    CHECK_FALSE(parse_error("fused / 0.5 > 1"));
  }
  SUBCASE("trailing tokens") {
    check_rejects("fused > unfused unfused", "unexpected 'unfused' (trailing tokens) at offset 16");
    check_rejects("fused > unfused )", "unexpected ')' (trailing tokens) at offset 16");
    check_rejects("fused < unfused < 2",
                  "unexpected '<' (trailing tokens; join comparisons with 'and') at offset 16");
  }
  SUBCASE("missing comparison") {
    check_rejects("fused",
                  "expected a comparison (<, <=, >, >=), got end of expression at offset 5");
    check_rejects("fused + 1 and fused > 1",
                  "expected a comparison (<, <=, >, >=), got 'and' at offset 10");
    check_rejects("fused > unfused and", "unexpected end of expression at offset 19");
    check_rejects("and fused > 1", "unexpected 'and' at offset 0");
  }
  SUBCASE("syntax") {
    check_rejects("(fused > 1)", "expected ')', got '>' at offset 7");
    check_rejects("fused > (1", "expected ')', got end of expression at offset 10");
    check_rejects("fused == 1", "unexpected character '=' at offset 6");
    check_rejects("fused > unfused # note", "unexpected character '#' at offset 16");
    check_rejects("fused > \xc3\xa9", "unexpected character 0xC3 at offset 8");
    check_rejects("fused > * 2", "unexpected '*' at offset 8");
    check_rejects("fused > abs 1", "expected '(' after abs, got '1' at offset 12");
  }
  SUBCASE("numbers") {
    check_rejects("fused > 1e999", "number 1e999 is out of range at offset 8");
    check_rejects("fused > 1.2.3", "malformed number '1.2.3' at offset 8");
    check_rejects("fused > 1.", "malformed number '1.' at offset 8");
    check_rejects("fused > 2x", "malformed number '2x' at offset 8");
    check_rejects("fused > .5", "unexpected character '.' at offset 8");
  }
}

TEST_CASE("a name where an arm id belongs says that expect takes arm ids") {
  check_rejects("layernorm.fused < unfused", "'layernorm.fused' is not an arm id: expect takes "
                                             "arm ids (arms: fused, unfused, a-b, b, lock1) at "
                                             "offset 0");
  check_rejects("fused < time(a.b.c)", "'a.b.c' is not an arm id: expect takes arm ids (arms: "
                                       "fused, unfused, a-b, b, lock1) at offset 13");
  check_rejects("fused > 1.5.", "malformed number '1.5.' at offset 8"); // a number, not a name
  const prereg::arm_aliases aliases{{"layernorm.fused", "fused"}, {"rmsnorm_np", "b"}};
  const auto with_aliases = [&](std::string_view text) {
    try {
      (void)expectation::parse(text, arm_ids, where, aliases);
    } catch (const prereg::error &e) {
      return std::string(e.what());
    }
    return std::string("parsed");
  };
  CHECK(with_aliases("layernorm.fused < unfused") ==
        "'layernorm.fused' is not an arm id: expect takes arm ids (arms: fused, unfused, a-b, b, "
        "lock1; did you mean 'fused', the arm that runs layernorm.fused?) at offset 0");
  CHECK(with_aliases("fused < rmsnorm_np") ==
        "unknown identifier 'rmsnorm_np' (arms: fused, unfused, a-b, b, lock1; did you mean 'b', "
        "the arm that runs rmsnorm_np?) at offset 8");
  CHECK(with_aliases("time(rmsnorm_np) < fused") ==
        "time() takes an arm id, got 'rmsnorm_np' (arms: fused, unfused, a-b, b, lock1; did you "
        "mean 'b', the arm that runs rmsnorm_np?) at offset 5");
  CHECK(with_aliases("fused < unfused") == "parsed");
}

TEST_CASE("nesting is limited to 64 levels") {
  const auto nested = [](int depth) {
    return std::string(static_cast<std::size_t>(depth), '(') + "fused" +
           std::string(static_cast<std::size_t>(depth), ')') + " > 1";
  };
  CHECK_FALSE(parse_error(nested(64)));
  check_rejects(nested(65), "expression nested deeper than 64 levels at offset 64");
  CHECK_FALSE(parse_error(std::string(64, '-') + "fused < 1"));
  check_rejects(std::string(100000, '-') + "fused < 1",
                "expression nested deeper than 64 levels at offset 64");
  check_rejects(std::string(100000, '('), "expression nested deeper than 64 levels at offset 64");
  std::string abs_chain;
  for (int i = 0; i < 65; ++i)
    abs_chain += "abs(";
  check_rejects(abs_chain + "fused", "expression nested deeper than 64 levels at offset 256");
}

TEST_CASE("expressions are limited to 1024 terms") {
  std::string sum = "fused";
  for (int i = 0; i < 511; ++i)
    sum += "+1";
  CHECK_FALSE(parse_error(sum + " > 0")); // exactly 1024 nodes
  check_rejects(sum + "+1 > 0", "expression has more than 1024 terms at offset 1027");
}

TEST_CASE("a kernel count is a whole number: an exact count is not a constant outcome") {
  const std::vector<std::string> arms{"fused", "unfused"};
  const auto exact =
      prereg::expectation::parse("kernels(fused) >= 1 and kernels(fused) <= 1", arms, "t");
  CHECK_FALSE(exact.constant_outcome().has_value());
  const auto never = prereg::expectation::parse("time(fused) >= 1 and time(fused) <= 1", arms, "t");
  CHECK(never.constant_outcome() == std::optional<bool>(false));
  const auto half =
      prereg::expectation::parse("kernels(fused) > 1 and kernels(fused) < 2", arms, "t");
  CHECK(half.constant_outcome() == std::optional<bool>(false)); // no whole number between
}

TEST_CASE("share(arm, \"label\") reads a region's share") {
  const auto e = parse("share(fused, \"attn\") > 30 and share(fused, \"rms.norm-1\") < 10");
  REQUIRE(e.references().size() == 2);
  CHECK(e.references()[0] == metric_ref{metric::share, "fused", "attn"});
  CHECK(e.references()[1] == metric_ref{metric::share, "fused", "rms.norm-1"});
  CHECK(e.holds(values{{{"fused", 1.0}}}));
  CHECK_FALSE(parse("share(fused, \"attn\") < 30").holds(values{{{"fused", 1.0}}}));
  // the same arm under two labels is two references; under time it is a third
  CHECK(parse("share(b, \"x\") + share(b, \"y\") < b").references().size() == 3);
  CHECK(prereg::is_expression_keyword("share"));
}

TEST_CASE("kernel_share(arm, \"label\") reads a region's share of the kernel time") {
  const auto e = parse("kernel_share(fused, \"attn\") < share(fused, \"attn\")");
  REQUIRE(e.references().size() == 2);
  CHECK(e.references()[0] == metric_ref{metric::kernel_share, "fused", "attn"});
  CHECK(e.references()[1] == metric_ref{metric::share, "fused", "attn"});
  CHECK(e.holds(values{{{"fused", 1.0}}})); // 10 < 40
  CHECK(prereg::is_expression_keyword("kernel_share"));
  CHECK(prereg::is_kernel_metric(metric::kernel_share));
  check_rejects("kernel_share(fused) > 1",
                "expected ',' and a region label after kernel_share's arm, got ')' at offset 18");
  check_rejects("kernel_share(fused, attn) > 1",
                "kernel_share() takes a quoted region label, got 'attn' at offset 20");
}

TEST_CASE("share's malformed forms are refused with their offsets") {
  check_rejects("share(fused) > 1",
                "expected ',' and a region label after share's arm, got ')' at offset 11");
  check_rejects("share(fused, attn) > 1",
                "share() takes a quoted region label, got 'attn' at offset 13");
  check_rejects("share(fused, \"\") > 1", "a region label is 1 to 64 characters at offset 13");
  check_rejects("share(fused, \"a b\") > 1",
                "a region label holds only A-Z a-z 0-9 _ . - at offset 15");
  check_rejects("share(fused, \"attn) > 1",
                "a region label holds only A-Z a-z 0-9 _ . - at offset 18");
  check_rejects("share(fused, \"attn", "unterminated region label at offset 13");
  check_rejects(
      "share(\"attn\", fused) > 1",
      "share() takes an arm id, got 'attn' (arms: fused, unfused, a-b, b, lock1) at offset 6");
  check_rejects("time(fused, \"x\") > 1", "expected ')', got ',' at offset 10");
  check_rejects("share(fused, \"" + std::string(65, 'a') + "\") > 1",
                "a region label is 1 to 64 characters at offset 13");
}
