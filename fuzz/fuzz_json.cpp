// Fuzzes the strict JSON parser and the RFC 8785 canonicaliser: a parsed value canonicalises
// without error, its canonical bytes parse back to the same value, and canonicalising is
// idempotent.
#include "fuzz_common.hpp"

#include "base/json.hpp"

#include <cmath>

namespace {

using prereg::json;

// Equality as JSON values: numbers compare as the doubles they denote (canonical form writes
// every number as a double, so 2^53+1 comes back as 2^53 and -0 as 0).
bool same_value(const json &a, const json &b) {
  if (a.is_number() && b.is_number())
    return a.get<double>() == b.get<double>();
  if (a.type() != b.type())
    return false;
  if (a.is_array()) {
    if (a.size() != b.size())
      return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_value(a[i], b[i]))
        return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size())
      return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      const auto other = b.find(it.key());
      if (other == b.end() || !same_value(it.value(), *other))
        return false;
    }
    return true;
  }
  return a == b;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace prereg;
  const std::string_view text = fuzz::as_text(data, size);
  json value;
  try {
    value = parse_json_strict(text, "fuzz.json");
  } catch (const error &e) {
    fuzz::expect_clean_rejection(e);
    if (e.where().rfind("fuzz.json:", 0) != 0)
      fuzz::broken("JSON rejection without file:line:column", e.line());
    return 0;
  }
  std::string canonical;
  try {
    canonical = canonical_json(value);
  } catch (const error &e) {
    fuzz::broken("a parsed value does not canonicalise", e.line());
  }
  json back;
  try {
    back = parse_json_strict(canonical, "canonical.json");
  } catch (const error &e) {
    fuzz::broken("canonical bytes do not parse", e.line() + "\n" + canonical);
  }
  if (!same_value(value, back))
    fuzz::broken("parse(canonical(x)) != x", canonical);
  if (canonical_json(back) != canonical)
    fuzz::broken("canonicalisation is not idempotent", canonical);
  for (const unsigned char c : canonical)
    if (c == '\n' || c == '\r' || c == '\t')
      fuzz::broken("canonical bytes hold raw whitespace", canonical);
  return 0;
}
