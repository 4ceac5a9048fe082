// Fuzzes the `expect` expression parser and evaluator: any text parses or is refused with
// exit 2; a parsed expression reads only known arms and evaluates on arbitrary values
// (NaN, infinities, zero, huge and tiny numbers) without a crash.
#include "fuzz_common.hpp"

#include "base/expr.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace prereg;
  static const std::vector<std::string> arms{"fused", "unfused", "a", "b-c", "x_1", "and-x"};
  const std::string_view text = fuzz::as_text(data, size);
  std::optional<expectation> parsed;
  try {
    parsed = expectation::parse(text, arms, "fuzz:expect");
  } catch (const error &e) {
    fuzz::expect_clean_rejection(e);
    if (e.where() != "fuzz:expect")
      fuzz::broken("expression rejection without its location", e.line());
    return 0;
  }
  for (const auto &ref : parsed->references())
    if (std::find(arms.begin(), arms.end(), ref.arm) == arms.end())
      fuzz::broken("an expression reads an unknown arm", ref.arm);
  for (const auto &arm : parsed->arms())
    if (std::find(arms.begin(), arms.end(), arm) == arms.end())
      fuzz::broken("arms() lists an unknown arm", arm);
  // Evaluate with values drawn from the input bytes (a small xorshift over their hash).
  std::uint64_t state = 0x9E3779B97F4A7C15ull ^ size;
  for (std::size_t i = 0; i < size; ++i)
    state = (state ^ data[i]) * 0x100000001B3ull;
  static const double specials[] = {0.0,
                                    -0.0,
                                    1.0,
                                    -1.0,
                                    1e-300,
                                    1e300,
                                    std::numeric_limits<double>::quiet_NaN(),
                                    std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::denorm_min()};
  for (int round = 0; round < 4; ++round) {
    const auto value = [&](const metric_ref &) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      if (round == 0)
        return specials[state % std::size(specials)];
      return static_cast<double>(static_cast<std::int64_t>(state % 2000001) - 1000000) / 1000.0;
    };
    (void)parsed->holds(value);
  }
  return 0;
}
