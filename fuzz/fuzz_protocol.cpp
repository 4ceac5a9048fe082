// Fuzzes the strict YAML protocol parser, the schema validator and normalisation: a protocol
// that validates normalises to JSON that canonicalises, parses back, re-validates and
// normalises to the same bytes (so its hash is stable).
#include "fuzz_common.hpp"

#include "base/json.hpp"
#include "spec/protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace prereg;
  const std::string_view text = fuzz::as_text(data, size);
  protocol p;
  try {
    p = parse_protocol(text, "fuzz.yaml");
  } catch (const error &e) {
    fuzz::expect_clean_rejection(e);
    if (e.where().rfind("fuzz.yaml", 0) != 0)
      fuzz::broken("protocol rejection that does not name the file", e.line());
    return 0;
  }
  try {
    const std::string canonical = canonical_json(to_json(p));
    const json body = parse_json_strict(canonical, "protocol.json");
    const protocol again = protocol_from_json(body, "protocol.json");
    if (canonical_json(to_json(again)) != canonical)
      fuzz::broken("normalisation is not idempotent", canonical);
    if (protocol_hash(again) != protocol_hash(p))
      fuzz::broken("the hash of the re-read protocol differs", canonical);
  } catch (const error &e) {
    fuzz::broken("a valid protocol's normalised form is refused", e.line());
  }
  return 0;
}
