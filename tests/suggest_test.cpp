// Tests of the "did you mean" helper (base/suggest.hpp).
#include "base/suggest.hpp"

#include <doctest/doctest.h>

using prereg::closest_match;
using prereg::did_you_mean;
using prereg::edit_distance;

TEST_CASE("edit distance counts insertions, deletions and substitutions") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("fused", "fused") == 0);
  CHECK(edit_distance("fussed", "fused") == 1);
  CHECK(edit_distance("rmsnorm_numpy", "rmsnorm_np") == 3);
  CHECK(edit_distance("abc", "") == 3);
}

TEST_CASE("the nearest candidate, only when it is near") {
  const std::vector<std::string> arms{"fused", "unfused", "numpy"};
  CHECK(closest_match("fussed", arms) == "fused");
  CHECK(closest_match("numpyy", arms) == "numpy");
  CHECK(closest_match("rmsnorm_numpy", {"rmsnorm_np", "helper"}) == "rmsnorm_np");
  CHECK_FALSE(closest_match("x", arms)); // one character: nothing is near
  CHECK_FALSE(closest_match("layernorm.fused", arms));
  CHECK_FALSE(closest_match("abs", {"a-b"})); // 2 edits of 3 characters
  CHECK(closest_match("rn", {"run", "list"}) == "run");
  CHECK(did_you_mean("fussed", arms) == "; did you mean 'fused'?");
  CHECK(did_you_mean("zzzzzz", arms).empty());
}
