// Tests of strict YAML, protocol validation (every rejection at its line:column),
// normalisation to JSON and the JSON round trip.
#include "base/fs.hpp"
#include "base/yaml_strict.hpp"
#include "prereg/error.hpp"
#include "spec/protocol.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <optional>
#include <string>

using prereg::json;

namespace {

const std::string file = "t.yaml";

// Line numbers matter: the rejection tests below name them.
const std::string base = R"(prereg: 1
id: ln_batch1
title: "LayerNorm at batch 1"
hypothesis: "Fusing forward and backward does not pay at the model's small shape"
device: cuda
operation: layernorm
dtype: fp32
shapes:
  rows: [128, 512, 1024, 4096, 16384, 65536]
  cols: [1024]
passes: [fwd, fwd+bwd]
operating_point: {rows: 128, cols: 1024}
arms:
  - id: unfused
    kernel: layernorm.unfused
    launch: stream
    repeat: 1
  - id: fused
    kernel: layernorm.fused
measurement:
  repetitions: 60
  warmup: 10
  l2_flush: true
  order: interleaved
analysis:
  statistic: median
  confidence: 0.95
  bootstrap_resamples: 10000
  unstable_iqr_ratio: 0.5
correctness:
  rtol: 1.0e-5
  atol: 1.0e-5
predictions:
  - id: P1
    claim: "At the model's shape the fused kernel is slower than the unfused one"
    at: {rows: 128, cols: 1024, pass: fwd+bwd}
    expect: "fused > unfused"
)";

// `text` with the one occurrence of `from` replaced by `to`.
std::string with(const std::string &text, const std::string &from, const std::string &to) {
  const auto pos = text.find(from);
  REQUIRE_MESSAGE(pos != std::string::npos, from);
  REQUIRE_MESSAGE(text.find(from, pos + 1) == std::string::npos, from);
  return text.substr(0, pos) + to + text.substr(pos + from.size());
}

std::string with(const std::string &from, const std::string &to) { return with(base, from, to); }

const std::string shapes_block =
    "shapes:\n  rows: [128, 512, 1024, 4096, 16384, 65536]\n  cols: [1024]\n";
const std::string arms_block =
    "arms:\n  - id: unfused\n    kernel: layernorm.unfused\n    launch: "
    "stream\n    repeat: 1\n  - id: fused\n    kernel: layernorm.fused\n";
const std::string hypothesis =
    "\"Fusing forward and backward does not pay at the model's small shape\"";
const std::string claim =
    "\"At the model's shape the fused kernel is slower than the unfused one\"";

json normalised(const std::string &yaml) {
  return prereg::to_json(prereg::parse_protocol(yaml, file));
}

std::optional<prereg::error> parse_error(const std::string &yaml) {
  try {
    (void)prereg::parse_protocol(yaml, file);
  } catch (const prereg::error &e) {
    return e;
  }
  return std::nullopt;
}

// Asserts exit 2 at `line:column` and that the message contains `part`.
void check_rejects(const std::string &yaml, int line, int column, const std::string &part) {
  const auto e = parse_error(yaml);
  REQUIRE_MESSAGE(e.has_value(), "accepted, expected: " << part);
  const std::string message = e->what();
  CAPTURE(message);
  CHECK(e->code() == prereg::exit_code::invalid);
  CHECK(e->where() == prereg::at(file, line, column));
  CHECK(message.find(part) != std::string::npos);
}

} // namespace

TEST_CASE("the contract's example protocol parses and normalises") {
  const auto p = prereg::parse_protocol(base, file);
  CHECK(p.id == "ln_batch1");
  CHECK(p.device == "cuda");
  CHECK(p.rows == std::vector<std::int64_t>{128, 512, 1024, 4096, 16384, 65536});
  CHECK(p.passes ==
        std::vector<prereg::pass_kind>{prereg::pass_kind::fwd, prereg::pass_kind::fwd_bwd});
  REQUIRE(p.operating_point.has_value());
  CHECK(p.operating_point->first == 128);
  REQUIRE(p.arms.size() == 2);
  CHECK(p.arms[1].launch == prereg::launch_mode::stream);
  CHECK(p.arms[1].repeat == 1);
  REQUIRE(p.predictions.size() == 1);
  CHECK(p.predictions[0].at.passes == std::vector<prereg::pass_kind>{prereg::pass_kind::fwd_bwd});

  const json expected = json::parse(R"({
    "prereg": 1, "id": "ln_batch1", "title": "LayerNorm at batch 1",
    "hypothesis": "Fusing forward and backward does not pay at the model's small shape",
    "device": "cuda", "operation": "layernorm", "dtype": "fp32",
    "shapes": {"rows": [128, 512, 1024, 4096, 16384, 65536], "cols": [1024]},
    "passes": ["fwd", "fwd+bwd"],
    "operating_point": {"rows": 128, "cols": 1024},
    "arms": [{"id": "unfused", "kernel": "layernorm.unfused", "launch": "stream", "repeat": 1},
             {"id": "fused", "kernel": "layernorm.fused", "launch": "stream", "repeat": 1}],
    "measurement": {"repetitions": 60, "warmup": 10, "l2_flush": true, "order": "interleaved"},
    "analysis": {"statistic": "median", "confidence": 0.95, "bootstrap_resamples": 10000,
                 "unstable_iqr_ratio": 0.5},
    "correctness": {"rtol": 1e-05, "atol": 1e-05},
    "predictions": [{"id": "P1",
                     "claim": "At the model's shape the fused kernel is slower than the unfused one",
                     "at": {"rows": [128], "cols": [1024], "pass": ["fwd+bwd"]},
                     "expect": "fused > unfused"}]
  })");
  CHECK(prereg::to_json(p) == expected);
  CHECK(prereg::to_json(p)["measurement"]["repetitions"].is_number_integer());
  CHECK(prereg::to_json(p)["analysis"]["confidence"].is_number_float());
  CHECK(prereg::to_json(p)["analysis"]["unstable_iqr_ratio"].is_number_float());
}

TEST_CASE("the sample protocols under tests/data parse") {
  const std::string dir = PREREG_TEST_DATA "/protocols/";
  const auto example = prereg::read_file(dir + "contract_example.yaml");
  CHECK(normalised(example) == normalised(base)); // comments and layout do not matter
  const auto cpu = prereg::parse_protocol(prereg::read_file(dir + "cpu_minimal.yaml"), file);
  CHECK(cpu.device == "cpu");
  CHECK(cpu.measurement.warmup == 10);
}

TEST_CASE("equivalent texts normalise to equal JSON") {
  const json expected = normalised(base);
  SUBCASE("reordered keys, comments, flow vs block style") {
    const std::string text = R"(# a comment
predictions: [{expect: fused > unfused, id: P1, at: {pass: [fwd+bwd], cols: [1024], rows: [128]},
  claim: "At the model's shape the fused kernel is slower than the unfused one"}]
correctness: {atol: 1.0e-5, rtol: 0.00001}   # same numbers, other spelling
analysis: {unstable_iqr_ratio: 0.50, bootstrap_resamples: 10000, confidence: 95e-2, statistic: median}
measurement:
  order: "interleaved"
  l2_flush: true
  warmup: 10
  repetitions: 60
arms:
- kernel: 'layernorm.unfused'
  id: unfused
- {id: fused, kernel: layernorm.fused, repeat: 1, launch: stream}
operating_point:
  cols: 1024
  rows: 128
passes:
  - fwd
  - fwd+bwd
shapes:
  cols:
    - 1024
  rows: [128, 512, 1024,
         4096, 16384, 65536]
dtype: fp32
operation: layernorm
device: cuda
hypothesis: >-
  Fusing forward and backward does not pay
  at the model's small shape
title: LayerNorm at batch 1
id: ln_batch1
prereg: 1
)";
    CHECK(normalised(text) == expected);
  }
  SUBCASE("omitted defaults equal explicit defaults") {
    std::string text = with("    launch: stream\n    repeat: 1\n", "");
    text = with(text, "  warmup: 10\n  l2_flush: true\n  order: interleaved\n", "");
    text = with(text,
                "analysis:\n  statistic: median\n  confidence: 0.95\n  bootstrap_resamples: "
                "10000\n  unstable_iqr_ratio: 0.5\n",
                "");
    text = with(text, "correctness:\n  rtol: 1.0e-5\n  atol: 1.0e-5\n", "");
    CHECK(normalised(text) == expected);
  }
  SUBCASE("CRLF line endings and a BOM") {
    std::string crlf;
    for (char c : base)
      crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    CHECK(normalised(crlf) == expected);
    CHECK(normalised("\xEF\xBB\xBF" + base) == expected);
  }
  SUBCASE("at: a scalar is a one-element list, lists take the protocol's order") {
    CHECK(normalised(with("{rows: 128, cols: 1024, pass: fwd+bwd}",
                          "{rows: [128], cols: [1024], pass: [fwd+bwd]}")) == expected);
    const auto all = normalised(with("    at: {rows: 128, cols: 1024, pass: fwd+bwd}\n", ""));
    const auto listed =
        normalised(with("{rows: 128, cols: 1024, pass: fwd+bwd}",
                        "{rows: [65536, 128, 512, 1024, 4096, 16384], pass: [fwd+bwd, fwd]}"));
    CHECK(all == listed);
    CHECK(all["predictions"][0]["at"] ==
          json::parse(R"({"rows": [128, 512, 1024, 4096, 16384, 65536], "cols": [1024],
                          "pass": ["fwd", "fwd+bwd"]})"));
    CHECK(normalised(with("{rows: 128, cols: 1024, pass: fwd+bwd}", "{}")) == all);
  }
  SUBCASE("an empty operating_point value is none") {
    const auto none = normalised(with("operating_point: {rows: 128, cols: 1024}\n", ""));
    CHECK(none["operating_point"].is_null());
    CHECK(normalised(with("operating_point: {rows: 128, cols: 1024}", "operating_point:")) == none);
    CHECK(normalised(with("operating_point: {rows: 128, cols: 1024}", "operating_point: ~")) ==
          none);
  }
}

TEST_CASE("correctness defaults depend on the dtype") {
  const auto no_tol = with("correctness:\n  rtol: 1.0e-5\n  atol: 1.0e-5\n", "");
  const auto fp32 = prereg::parse_protocol(no_tol, file);
  CHECK(fp32.correctness.rtol == 1e-5);
  CHECK(fp32.correctness.atol == 1e-5);
  const auto fp16 = prereg::parse_protocol(with(no_tol, "dtype: fp32", "dtype: fp16"), file);
  CHECK(fp16.correctness.rtol == 1e-3);
  CHECK(fp16.correctness.atol == 1e-3);
  const auto bf16 = prereg::parse_protocol(with(no_tol, "dtype: fp32", "dtype: bf16"), file);
  CHECK(bf16.correctness.rtol == 1.6e-2);
  CHECK(bf16.correctness.atol == 1e-2);
  const auto only_atol =
      prereg::parse_protocol(with(with(no_tol, "dtype: fp32", "dtype: bf16"),
                                  "predictions:", "correctness: {atol: 0}\npredictions:"),
                             file);
  CHECK(only_atol.correctness.rtol == 1.6e-2);
  CHECK(only_atol.correctness.atol == 0);
}

TEST_CASE("every changed value changes the normalised JSON") {
  const json original = normalised(base);
  const std::vector<std::pair<std::string, std::string>> changes{
      {"id: ln_batch1", "id: ln_batch2"},
      {"title: \"LayerNorm at batch 1\"", "title: \"LayerNorm at batch 2\""},
      {"small shape\"", "small shapes\""},
      {"dtype: fp32", "dtype: fp16"},
      {"rows: [128, 512,", "rows: [512, 128,"},
      {"cols: [1024]", "cols: [1024, 2048]"},
      {"passes: [fwd, fwd+bwd]", "passes: [fwd+bwd, fwd]"},
      {"operating_point: {rows: 128, cols: 1024}", "operating_point: {rows: 512, cols: 1024}"},
      {"  - id: unfused", "  - id: unfused2"},
      {"layernorm.fused", "layernorm.lockgroup"},
      {"launch: stream", "launch: graph"},
      {"repeat: 1", "repeat: 2"},
      {"repetitions: 60", "repetitions: 61"},
      {"warmup: 10", "warmup: 0"},
      {"l2_flush: true", "l2_flush: false"},
      {"order: interleaved", "order: sequential"},
      {"statistic: median", "statistic: mean"},
      {"confidence: 0.95", "confidence: 0.99"},
      {"bootstrap_resamples: 10000", "bootstrap_resamples: 10001"},
      {"unstable_iqr_ratio: 0.5", "unstable_iqr_ratio: 0.25"},
      {"rtol: 1.0e-5", "rtol: 1.0e-4"},
      {"atol: 1.0e-5", "atol: 2.0e-5"},
      {"- id: P1", "- id: P2"},
      {"slower than the unfused one", "slower than the unfused one."},
      {"pass: fwd+bwd}", "pass: fwd}"},
      {"rows: 128, cols: 1024, pass", "rows: 512, cols: 1024, pass"},
      {"\"fused > unfused\"", "\"fused >= unfused\""},
      {"operating_point: {rows: 128, cols: 1024}\n", ""},
  };
  for (const auto &[from, to] : changes) {
    CAPTURE(from);
    std::string text = with(from, to);
    if (to == "  - id: unfused2")
      text = with(text, "fused > unfused\"", "fused > unfused2\"");
    CHECK(normalised(text) != original);
  }
  SUBCASE("device and operation") {
    const std::string cpu = with("device: cuda", "device: cpu");
    CHECK(normalised(cpu) != original);
    const std::string rms = with(with(with("operation: layernorm", "operation: rmsnorm"),
                                      "layernorm.unfused", "rmsnorm.unfused"),
                                 "layernorm.fused", "rmsnorm.fused");
    CHECK(normalised(rms) != original);
  }
}

TEST_CASE("protocol_from_json rebuilds and re-validates") {
  const auto p = prereg::parse_protocol(base, file);
  const json body = prereg::to_json(p);
  SUBCASE("round trip") {
    CHECK(prereg::to_json(prereg::protocol_from_json(body, "protocol.json")) == body);
    const json reparsed = json::parse(body.dump());
    CHECK(prereg::to_json(prereg::protocol_from_json(reparsed, "protocol.json")) == body);
    const auto minimal = prereg::parse_protocol(
        prereg::read_file(PREREG_TEST_DATA "/protocols/cpu_minimal.yaml"), file);
    CHECK(prereg::to_json(prereg::protocol_from_json(prereg::to_json(minimal), "x")) ==
          prereg::to_json(minimal));
  }
  SUBCASE("a float written as an integer (as JCS does for 2.0) reads back") {
    json b = body;
    b["analysis"]["unstable_iqr_ratio"] = 2;
    b["correctness"]["atol"] = 0;
    const auto q = prereg::protocol_from_json(b, "protocol.json");
    CHECK(q.analysis.unstable_iqr_ratio == 2.0);
    CHECK(prereg::to_json(q)["analysis"]["unstable_iqr_ratio"].is_number_float());
  }
  SUBCASE("errors name the JSON pointer") {
    const auto check = [](const json &b, const std::string &where, const std::string &part) {
      try {
        (void)prereg::protocol_from_json(b, "store/protocol.json");
        FAIL("accepted: " << part);
      } catch (const prereg::error &e) {
        CHECK(e.code() == prereg::exit_code::invalid);
        CHECK(e.where() == where);
        CHECK(std::string(e.what()).find(part) != std::string::npos);
      }
    };
    json b = body;
    b["arms"][0]["extra"] = 1;
    check(b, "store/protocol.json#/arms/0", "unknown key 'extra'");
    b = body;
    b["measurement"]["repetitions"] = "60";
    check(b, "store/protocol.json#/measurement/repetitions", "quoted string");
    b = body;
    b["measurement"]["repetitions"] = 60.0;
    check(b, "store/protocol.json#/measurement/repetitions", "plain decimal, got '60.0'");
    b = body;
    b["measurement"]["l2_flush"] = "true";
    check(b, "store/protocol.json#/measurement/l2_flush", "must be true or false");
    b = body;
    b["arms"][1]["kernel"] = "layernorm.missing";
    check(b, "store/protocol.json#/arms/1/kernel", "unknown kernel 'layernorm.missing'");
    b = body;
    b["predictions"][0]["at"]["rows"] = json::array();
    check(b, "store/protocol.json#/predictions/0/at/rows", "must not be empty");
    b = body;
    b.erase("title");
    check(b, "store/protocol.json#", "missing required key 'title'");
    b = body;
    b["predictions"][0]["expect"] = "fused > missing";
    check(b, "store/protocol.json#/predictions/0/expect", "unknown identifier 'missing'");
    check(json::array(), "store/protocol.json#", "must be a mapping");
  }
}

TEST_CASE("strict YAML: structure") {
  SUBCASE("unknown keys at every level") {
    check_rejects(base + "colour: red\n", 38, 1, "unknown key 'colour' in the protocol");
    check_rejects(with("  order: interleaved", "  ordr: interleaved"), 24, 3,
                  "unknown key 'ordr' in measurement");
    check_rejects(with("    repeat: 1", "    repeats: 1"), 17, 5,
                  "unknown key 'repeats' in arms[0]");
    check_rejects(with("pass: fwd+bwd}", "passes: fwd+bwd}"), 36, 33,
                  "unknown key 'passes' in predictions[0].at");
    check_rejects(with("  cols: [1024]", "  cols: [1024]\n  depth: [1]"), 11, 3,
                  "unknown key 'depth' in shapes");
    check_rejects(with("{rows: 128, cols: 1024}", "{rows: 128, cols: 1024, x: 1}"), 12, 42,
                  "unknown key 'x' in operating_point");
    check_rejects(with("  statistic: median", "  Statistic: median"), 26, 3, "unknown key");
    check_rejects(with("  rtol: 1.0e-5", "  rtol: 1.0e-5\n  eps: 1"), 32, 3,
                  "unknown key 'eps' in correctness");
    check_rejects(with("    claim:", "    note: x\n    claim:"), 35, 5,
                  "unknown key 'note' in predictions[0]");
  }
  SUBCASE("duplicate keys") {
    check_rejects(with("id: ln_batch1\n", "id: ln_batch1\nid: other\n"), 3, 1,
                  "duplicate key 'id' (first at t.yaml:2:1)");
    check_rejects(with("  warmup: 10", "  warmup: 10\n  \"warmup\": 10"), 23, 3,
                  "duplicate key 'warmup'");
    check_rejects(with("{rows: 128, cols: 1024}", "{rows: 128, rows: 128}"), 12, 30,
                  "duplicate key 'rows'");
  }
  SUBCASE("anchors, aliases, merge keys, tags") {
    check_rejects(with("  rows: [128,", "  rows: &r [128,"), 9, 9, "anchors (&r)");
    check_rejects(with("  cols: [1024]", "  cols: *r"), 10, 9, "anchor");
    check_rejects(with("  warmup: 10", "  <<: {warmup: 10}"), 22, 3, "merge keys (<<)");
    check_rejects(with("dtype: fp32", "dtype: !dt fp32"), 7, 8, "tags (!dt)");
    check_rejects(with("title: \"LayerNorm", "title: !!str \"LayerNorm"), 3, 8, "tags (!!str)");
    check_rejects(with("dtype: fp32", "dtype: ! fp32"), 7, 8, "tags (!)");
    check_rejects(with("passes: [fwd", "passes: !!seq [fwd"), 11, 9, "tags (!!seq)");
    check_rejects(with("shapes:\n", "shapes: !!map\n"), 8, 9, "tags (!!map)");
    check_rejects(with("  warmup: 10", "  warmup: !!int 10"), 22, 11, "tags (!!int)");
  }
  SUBCASE("more than one document") {
    check_rejects(base + "---\nprereg: 1\n", 38, 1, "more than one YAML document");
    check_rejects("---\n" + base + "...\n---\n", 40, 1, "more than one YAML document");
    CHECK_FALSE(parse_error("%YAML 1.2\n---\n" + base + "...\n"));
  }
  SUBCASE("non-scalar, null and non-mapping nodes") {
    check_rejects(with("id: ln_batch1\n", "id: ln_batch1\n? [a]\n: 1\n"), 3, 3,
                  "mapping keys must be scalars");
    check_rejects(with("id: ln_batch1\n", "id: ln_batch1\n{a: 1}: 1\n"), 3, 1,
                  "mapping keys must be scalars");
    check_rejects(with("id: ln_batch1\n", "id: ln_batch1\n~: 1\n"), 3, 1,
                  "mapping keys must be scalars");
    check_rejects("- 1\n- 2\n", 1, 1, "the protocol must be a mapping, got a list");
    check_rejects("", 1, 1, "empty document");
    check_rejects("# only a comment\n", 1, 1, "empty document");
    check_rejects("---\n", 2, 1, "the protocol must be a mapping, got null");
    check_rejects(with("title: \"LayerNorm at batch 1\"", "title:"), 3, 1,
                  "title must be a string, got null");
    check_rejects(with("title: \"LayerNorm at batch 1\"", "title: ~"), 3, 8,
                  "title must be a string, got null");
    check_rejects(with(shapes_block, "shapes: 1\n"), 8, 9, "shapes must be a mapping, got '1'");
    check_rejects(with("passes: [fwd, fwd+bwd]", "passes: fwd"), 11, 9,
                  "passes must be a list, got 'fwd'");
    check_rejects(with("    kernel: layernorm.fused", "    kernel: [layernorm.fused]"), 19, 13,
                  "arms[1].kernel must be a string, got a list");
  }
  SUBCASE("missing required keys") {
    check_rejects(with("id: ln_batch1\n", ""), 1, 1, "missing required key 'id' in the protocol");
    check_rejects(with("  repetitions: 60\n", ""), 21, 3,
                  "missing required key 'repetitions' in measurement");
    check_rejects(with("    kernel: layernorm.fused\n", ""), 18, 5,
                  "missing required key 'kernel' in arms[1]");
    check_rejects(with("    expect: \"fused > unfused\"\n", ""), 34, 5,
                  "missing required key 'expect' in predictions[0]");
    check_rejects(with("{rows: 128, cols: 1024}", "{rows: 128}"), 12, 18,
                  "missing required key 'cols' in operating_point");
  }
  SUBCASE("syntax errors carry yaml-cpp's mark") {
    check_rejects(with("cols: [1024]", "cols: [1024"), 11, 7,
                  "invalid YAML: end of sequence flow not found");
    check_rejects(with("title: \"LayerNorm at batch 1\"", "title: \"LayerNorm"), 4, 14,
                  "invalid YAML");
    check_rejects("a: 1\n- b\n", 2, 1, "invalid YAML");
  }
}

TEST_CASE("strict YAML: bytes, characters and columns") {
  SUBCASE("not UTF-8") {
    check_rejects(with("LayerNorm at batch 1", "LayerNorm \xff at batch 1"), 3, 19,
                  "not valid UTF-8");
    check_rejects(with("LayerNorm at batch 1", "LayerNorm \xc3\xa9\xc0\x80"), 3, 20,
                  "not valid UTF-8");
    check_rejects(with("LayerNorm at batch 1", "\xed\xa0\x80"), 3, 9,
                  "not valid UTF-8"); // surrogate
    check_rejects(with("LayerNorm at batch 1", "\xf4\x90\x80\x80"), 3, 9, "not valid UTF-8");
    check_rejects(base + "\xe2\x82", 38, 1, "not valid UTF-8"); // truncated at the end
    CHECK(
        normalised(with("LayerNorm at batch 1", "LayerNorm \xc3\xa9 \xf0\x9f\x98\x80"))["title"] ==
        "LayerNorm \xc3\xa9 \xf0\x9f\x98\x80");
  }
  SUBCASE("over 1 MiB") {
    const std::string padding(1024 * 1024 - base.size() - 1, ' ');
    const std::string fits = base + "#" + padding;
    REQUIRE(fits.size() == 1024 * 1024);
    CHECK_FALSE(parse_error(fits));
    const auto e = parse_error(fits + " ");
    REQUIRE(e.has_value());
    CHECK(e->code() == prereg::exit_code::invalid);
    CHECK(e->where() == file);
    CHECK(std::string(e->what()) ==
          "file is 1048577 bytes, more than the limit of 1 MiB (1048576 bytes)");
  }
  SUBCASE("control characters and a bare carriage return") {
    check_rejects(with("LayerNorm at", std::string("LayerNorm\0at", 12)), 3, 18,
                  "control character 0x00");
    check_rejects(with("LayerNorm at", "LayerNorm\x1b at"), 3, 18, "control character 0x1B");
    check_rejects(with("id: ln_batch1\n", "id: ln_batch1\r"), 2, 14, "carriage return");
  }
  SUBCASE("columns count characters, not bytes") {
    const auto text = with(
        "  - id: P1\n    claim: \"At the model's shape the fused kernel is slower than the unfused "
        "one\"\n    at: {rows: 128, cols: 1024, pass: fwd+bwd}\n    expect: \"fused > unfused\"\n",
        "  - {id: P1, claim: \"\xc3\xa9\xc3\xa9\xe2\x82\xac\", expect: \"fused > slow\"}\n");
    check_rejects(text, 34, 36, "unknown identifier 'slow'");
  }
  SUBCASE("CRLF reports the same positions") {
    std::string crlf;
    for (char c : with("  order: interleaved", "  ordr: interleaved"))
      crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    check_rejects(crlf, 24, 3, "unknown key 'ordr'");
  }
}

TEST_CASE("strict YAML: nesting and sizes are limited") {
  SUBCASE("100000 open brackets stop at depth 64") {
    check_rejects("a: " + std::string(100000, '['), 1, 67, "nesting deeper than 64 levels");
    check_rejects("a: " + std::string(100000, '{'), 1, 67, "nesting deeper than 64 levels");
  }
  SUBCASE("deep block nesting") {
    std::string compact = "a:\n";
    for (int i = 0; i < 100; ++i)
      compact += "- ";
    compact += "x\n";
    check_rejects(compact, 2, 129, "nesting deeper than 64 levels");
    std::string indented;
    for (int i = 0; i < 100; ++i)
      indented += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
    check_rejects(indented, 65, 65, "nesting deeper than 64 levels");
  }
  SUBCASE("brackets inside quoted and block scalars, and comments, do not count") {
    const std::string brackets(200, '[');
    CHECK_FALSE(parse_error(with("LayerNorm at batch 1", brackets)));
    CHECK_FALSE(
        parse_error(with("title: \"LayerNorm at batch 1\"", "title: '" + brackets + " it''s'")));
    CHECK_FALSE(parse_error(with("title: \"LayerNorm at batch 1\"", "title: a " + brackets)));
    CHECK_FALSE(
        parse_error(with("title: \"LayerNorm at batch 1\"", "title: |\n  " + brackets + "\n  x")));
    CHECK_FALSE(parse_error(base + "# " + brackets + "\n"));
    check_rejects(with("cols: [1024]", "cols: [1024, \"" + brackets + "\"]"), 10, 16,
                  "shapes.cols must be an integer");
  }
  SUBCASE("list lengths") {
    std::string rows = "[1";
    for (int i = 2; i <= 1025; ++i)
      rows += ", " + std::to_string(i);
    rows += "]";
    check_rejects(with("[128, 512, 1024, 4096, 16384, 65536]", rows), 9, 5047,
                  "a list may hold at most 1024 items");
  }
}

TEST_CASE("wrong types") {
  SUBCASE("a quoted number") {
    check_rejects(with("repetitions: 60", "repetitions: \"60\""), 21, 16,
                  "measurement.repetitions must be an integer from 3 to 100000, got the quoted "
                  "string \"60\"");
    check_rejects(with("confidence: 0.95", "confidence: '0.95'"), 27, 15,
                  "analysis.confidence must be a number, got the quoted string \"0.95\"");
    check_rejects(with("rows: [128,", "rows: [\"128\","), 9, 10, "quoted string");
    check_rejects(with("prereg: 1", "prereg: \"1\""), 1, 9, "quoted string");
  }
  SUBCASE("booleans are only plain true and false") {
    for (const std::string v :
         {"yes", "no", "on", "off", "True", "FALSE", "y", "n", "1", "\"true\"", "'false'"}) {
      CAPTURE(v);
      check_rejects(with("l2_flush: true", "l2_flush: " + v), 23, 13,
                    "measurement.l2_flush must be true or false");
    }
    CHECK(prereg::parse_protocol(with("l2_flush: true", "l2_flush: false"), file)
              .measurement.l2_flush == false);
  }
  SUBCASE("integers are plain decimal") {
    for (const std::string v : {"0x3C", "6e1", "60.0", "+60", "060", "1_000", "0o74", "60 reps"}) {
      CAPTURE(v);
      check_rejects(with("repetitions: 60", "repetitions: " + v), 21, 16, "plain decimal");
    }
  }
  SUBCASE("floats are plain decimal or exponent") {
    for (const std::string v :
         {".95", "95e-2.0", "0.95.", "+0.95", ".inf", ".nan", "1,5", "0x1p-1"}) {
      CAPTURE(v);
      check_rejects(with("confidence: 0.95", "confidence: " + v), 27, 15, "plain decimal number");
    }
    CHECK(prereg::parse_protocol(with("confidence: 0.95", "confidence: 9.5E-1"), file)
              .analysis.confidence == 0.95);
  }
  SUBCASE("strings that YAML may read as something else must be quoted") {
    check_rejects(with("title: \"LayerNorm at batch 1\"", "title: yes"), 3, 8, "quote it");
    check_rejects(with("title: \"LayerNorm at batch 1\"", "title: 2024"), 3, 8, "quote it");
    check_rejects(with("title: \"LayerNorm at batch 1\"", "title: -1.5 ms"), 3, 8, "quote it");
    check_rejects(with("id: ln_batch1", "id: 123"), 2, 5, "quote it");
    CHECK(prereg::parse_protocol(with("id: ln_batch1", "id: \"123\""), file).id == "123");
    CHECK(prereg::parse_protocol(with("title: \"LayerNorm at batch 1\"", "title: \"yes\""), file)
              .title == "yes");
  }
  SUBCASE("enumerations") {
    check_rejects(with("device: cuda", "device: gpu"), 5, 9,
                  "device must be one of cuda | cpu, got 'gpu'");
    check_rejects(with("dtype: fp32", "dtype: fp64"), 7, 8,
                  "dtype must be one of fp32 | fp16 | bf16");
    check_rejects(with("operation: layernorm", "operation: conv"), 6, 12,
                  "operation must be one of layernorm | rmsnorm | softmax, got 'conv'");
    check_rejects(with("operation: layernorm", "operation: [layernorm]"), 6, 12,
                  "operation must be one of layernorm | rmsnorm | softmax, got a list");
    check_rejects(with("operation: layernorm", "operation: softmax"), 6, 12,
                  "operation softmax needs prereg: 2 (prereg: 1 knows layernorm | rmsnorm)");
    check_rejects(with("passes: [fwd, fwd+bwd]", "passes: [fwd, bwd]"), 11, 15,
                  "passes must be one of fwd | fwd+bwd");
    check_rejects(with("launch: stream", "launch: async"), 16, 13,
                  "arms[0].launch must be one of stream | graph");
    check_rejects(with("order: interleaved", "order: random"), 24, 10,
                  "measurement.order must be one of");
    check_rejects(with("statistic: median", "statistic: p50"), 26, 14,
                  "analysis.statistic must be one of median | mean | min");
    check_rejects(with("device: cuda", "device: CUDA"), 5, 9, "device must be one of");
    CHECK(prereg::parse_protocol(with("device: cuda", "device: \"cuda\""), file).device == "cuda");
  }
}

TEST_CASE("values and ranges") {
  SUBCASE("schema version") {
    check_rejects(with("prereg: 1", "prereg: 3"), 1, 9,
                  "unsupported schema version prereg: 3 (this tool reads prereg: 1 and prereg: 2)");
    check_rejects(with("prereg: 1", "prereg: 0"), 1, 9, "unsupported schema version prereg: 0");
    check_rejects(with("prereg: 1", "prereg: 1.0"), 1, 9, "plain decimal");
  }
  SUBCASE("ids") {
    check_rejects(with("id: ln_batch1", "id: LN"), 2, 5,
                  "id must match [a-z0-9][a-z0-9_-]{0,63}, got 'LN'");
    check_rejects(with("id: ln_batch1", "id: _ln"), 2, 5, "id must match");
    check_rejects(with("id: ln_batch1", "id: ln.batch"), 2, 5, "id must match");
    check_rejects(with("id: ln_batch1", "id: \"\""), 2, 5, "id must match");
    check_rejects(with("id: ln_batch1", "id: " + std::string(65, 'a')), 2, 5, "id must match");
    CHECK_FALSE(parse_error(with("id: ln_batch1", "id: " + std::string(64, 'a'))));
    check_rejects(with("  - id: fused", "  - id: unfused"), 18, 9, "duplicate arm id 'unfused'");
    check_rejects(with("  - id: fused", "  - id: Fused"), 18, 9, "arms[1].id must match");
    check_rejects(with("  - id: fused", "  - id: time"), 18, 9,
                  "arm id 'time' is a word of the expect language");
    check_rejects(with("  - id: fused", "  - id: \"1e3\""), 18, 9,
                  "arm id '1e3' reads as a number");
    check_rejects(with("  - id: P1", "  - id: P 1"), 34, 9,
                  "predictions[0].id must match [A-Za-z0-9_.-]{1,64}");
    check_rejects(
        with("  - id: P1\n", "  - id: P1\n    claim: x\n    expect: fused > 0\n  - id: P1\n"), 37,
        9, "duplicate prediction id 'P1'");
  }
  SUBCASE("non-empty strings") {
    check_rejects(with("title: \"LayerNorm at batch 1\"", "title: \"\""), 3, 8,
                  "title must not be empty");
    check_rejects(with("title: \"LayerNorm at batch 1\"", "title: \"  \""), 3, 8,
                  "title must not be empty");
    check_rejects(with(hypothesis, "\"\""), 4, 13, "hypothesis must not be empty");
    check_rejects(with(claim, "''"), 35, 12, "predictions[0].claim must not be empty");
    check_rejects(with("\"fused > unfused\"", "\"\""), 37, 13,
                  "predictions[0].expect must not be empty");
  }
  SUBCASE("shapes and passes") {
    check_rejects(with("cols: [1024]", "cols: []"), 10, 9, "shapes.cols must not be empty");
    check_rejects(with("rows: [128, 512,", "rows: [0, 512,"), 9, 10,
                  "shapes.rows must be an integer from 1 to 2147483648, got 0");
    check_rejects(with("rows: [128, 512,", "rows: [-128, 512,"), 9, 10, "got -128");
    check_rejects(with("rows: [128, 512,", "rows: [2147483649, 512,"), 9, 10, "got 2147483649");
    check_rejects(with("rows: [128, 512,", "rows: [99999999999999999999, 512,"), 9, 10,
                  "got 99999999999999999999");
    check_rejects(with("rows: [128, 512,", "rows: [128, 128,"), 9, 15,
                  "shapes.rows lists 128 twice");
    check_rejects(with("passes: [fwd, fwd+bwd]", "passes: [fwd, fwd]"), 11, 15,
                  "passes lists fwd twice");
    check_rejects(with("passes: [fwd, fwd+bwd]", "passes: []"), 11, 9, "passes must not be empty");
  }
  SUBCASE("operating point inside shapes") {
    check_rejects(with("{rows: 128, cols: 1024}", "{rows: 256, cols: 1024}"), 12, 25,
                  "operating_point.rows 256 is not in shapes.rows");
    check_rejects(with("{rows: 128, cols: 1024}", "{rows: 128, cols: 512}"), 12, 36,
                  "operating_point.cols 512 is not in shapes.cols");
  }
  SUBCASE("arms and kernels") {
    check_rejects(with("kernel: layernorm.unfused", "kernel: layernorm.fast"), 15, 13,
                  "unknown kernel 'layernorm.fast' for device cuda");
    check_rejects(
        with("kernel: layernorm.fused", "kernel: rmsnorm.fused"), 19, 13,
        "kernel 'rmsnorm.fused' computes rmsnorm, but the protocol's operation is layernorm");
    const auto cpu = with("device: cuda", "device: cpu");
    CHECK_FALSE(parse_error(cpu));
    check_rejects(with(cpu, "kernel: layernorm.fused", "kernel: layernorm.lockgroup"), 19, 13,
                  "unknown kernel 'layernorm.lockgroup' for device cpu");
    check_rejects(with(cpu, "dtype: fp32", "dtype: bf16"), 15, 13,
                  "kernel 'layernorm.unfused' (cpu) does not support dtype bf16");
    check_rejects(with(arms_block, "arms: []\n"), 13, 7, "arms must not be empty");
    check_rejects(with("repeat: 1", "repeat: 0"), 17, 13,
                  "arms[0].repeat must be an integer from 1 to 4096, got 0");
    check_rejects(with("repeat: 1", "repeat: 4097"), 17, 13, "got 4097");
    CHECK(prereg::parse_protocol(with("repeat: 1", "repeat: 4096"), file).arms[0].repeat == 4096);
  }
  SUBCASE("measurement") {
    check_rejects(with("repetitions: 60", "repetitions: 2"), 21, 16, "from 3 to 100000, got 2");
    check_rejects(with("repetitions: 60", "repetitions: 100001"), 21, 16, "got 100001");
    check_rejects(with("warmup: 10", "warmup: -1"), 22, 11,
                  "measurement.warmup must be an integer from 0 to 100000, got -1");
    check_rejects(with("warmup: 10", "warmup: 100001"), 22, 11, "got 100001");
    CHECK(prereg::parse_protocol(with("warmup: 10", "warmup: 0"), file).measurement.warmup == 0);
    CHECK(prereg::parse_protocol(with("repetitions: 60", "repetitions: 3"), file)
              .measurement.repetitions == 3);
  }
  SUBCASE("analysis") {
    check_rejects(with("confidence: 0.95", "confidence: 0.5"), 27, 15,
                  "analysis.confidence must be above 0.5 and below 1, got 0.5");
    check_rejects(with("confidence: 0.95", "confidence: 1"), 27, 15, "got 1");
    check_rejects(with("confidence: 0.95", "confidence: 1e999"), 27, 15,
                  "analysis.confidence is out of range: 1e999");
    check_rejects(with("bootstrap_resamples: 10000", "bootstrap_resamples: 99"), 28, 24,
                  "from 100 to 1000000, got 99");
    check_rejects(with("bootstrap_resamples: 10000", "bootstrap_resamples: 1000001"), 28, 24,
                  "got 1000001");
    check_rejects(with("unstable_iqr_ratio: 0.5", "unstable_iqr_ratio: 0"), 29, 23,
                  "analysis.unstable_iqr_ratio must be above 0, got 0");
    check_rejects(with("unstable_iqr_ratio: 0.5", "unstable_iqr_ratio: -0.5"), 29, 23, "above 0");
  }
  SUBCASE("correctness") {
    check_rejects(with("rtol: 1.0e-5", "rtol: -1.0e-5"), 31, 9,
                  "correctness.rtol must be 0 or more, got -1.0e-5");
    check_rejects(with("atol: 1.0e-5", "atol: -1"), 32, 9, "correctness.atol must be 0 or more");
    CHECK(prereg::parse_protocol(with("rtol: 1.0e-5", "rtol: 0"), file).correctness.rtol == 0);
  }
}

TEST_CASE("predictions name only what the protocol has") {
  check_rejects(
      with("\"fused > unfused\"", "\"fast > unfused\""), 37, 13,
      "prediction P1: expect: unknown identifier 'fast' (arms: unfused, fused) at offset 0");
  check_rejects(with("\"fused > unfused\"", "\"fused > unfused / 0\""), 37, 13,
                "division by a constant zero at offset 18");
  check_rejects(with("\"fused > unfused\"", "\"fused > unfused fused\""), 37, 13,
                "trailing tokens");
  check_rejects(with("\"fused > unfused\"", "fused"), 37, 13, "expected a comparison");
  check_rejects(with("at: {rows: 128, cols", "at: {rows: 256, cols"), 36, 16,
                "predictions[0].at.rows selects 256, which the protocol does not have (it has 128, "
                "512, 1024, 4096, 16384, 65536)");
  check_rejects(with("at: {rows: 128, cols", "at: {rows: [128, 3], cols"), 36, 22,
                "at.rows selects 3");
  check_rejects(with("cols: 1024, pass", "cols: 2048, pass"), 36, 27, "at.cols selects 2048");
  check_rejects(
      with(with("passes: [fwd, fwd+bwd]", "passes: [fwd]"), "pass: fwd+bwd}", "pass: [fwd+bwd]}"),
      36, 40, "at.pass selects fwd+bwd, which the protocol does not have (it has fwd)");
  check_rejects(with("pass: fwd+bwd}", "pass: bwd}"), 36, 39,
                "at.pass must be one of fwd | fwd+bwd");
  check_rejects(with("at: {rows: 128, cols", "at: {rows: [128, 128], cols"), 36, 22,
                "at.rows lists 128 twice");
  check_rejects(with("at: {rows: 128, cols", "at: {rows: [], cols"), 36, 16,
                "at.rows must not be empty");
  check_rejects(with("at: {rows: 128, cols", "at: {rows: \"128\", cols"), 36, 16, "quoted string");
  check_rejects(with("    at: {rows: 128, cols: 1024, pass: fwd+bwd}", "    at: [128]"), 36, 9,
                "predictions[0].at must be a mapping, got a list");
}

TEST_CASE("hostile sizes are refused with the numbers") {
  SUBCASE("at most 64 arms") {
    std::string arms = "arms:\n";
    for (int i = 0; i < 65; ++i)
      arms += fmt::format("  - {{id: a{}, kernel: layernorm.fused}}\n", i);
    check_rejects(with(arms_block, arms), 14, 3, "arms has 65 items, more than the limit of 64");
  }
  SUBCASE("at most 256 predictions") {
    std::string preds;
    for (int i = 0; i < 257; ++i)
      preds += fmt::format("  - {{id: P{}, claim: c, expect: fused > 1}}\n", i);
    const auto head = base.substr(0, base.find("predictions:\n") + 13);
    check_rejects(head + preds, 34, 3, "predictions has 257 items, more than the limit of 256");
  }
  SUBCASE("at most 20000 cells") {
    std::string rows = "[1";
    for (int i = 2; i <= 1001; ++i)
      rows += ", " + std::to_string(i);
    rows += "]";
    const auto text = with(with(with("[128, 512, 1024, 4096, 16384, 65536]", rows), "cols: [1024]",
                                "cols: [1024, 2048, 4096, 8192, 16]"),
                           "operating_point: {rows: 128, cols: 1024}\n", "");
    check_rejects(text, 9, 3,
                  "too many cells: 2 arms x 2 passes x 1001 rows x 5 cols = 20020, more than the "
                  "limit of 20000");
  }
  SUBCASE("at most 1e8 timed invocations") {
    const auto text =
        with(with("repeat: 1", "repeat: 4096"), "repetitions: 60", "repetitions: 5000");
    check_rejects(text, 21, 16,
                  "too many timed invocations: 12 cells per arm x (5000 repetitions + 10 warmup) x "
                  "4097 summed repeat over arms = 246311640, more than the limit of 100000000");
  }
}

// --- schema 2 ---------------------------------------------------------------------------------

namespace {

// `base` as prereg: 2: same lines, `axes:` in place of `shapes:` (built without doctest's
// macros, which must not run before main).
const std::string base2 = [] {
  std::string s = base;
  s.replace(s.find("prereg: 1"), 9, "prereg: 2");
  s.replace(s.find("shapes:"), 7, "axes:");
  return s;
}();

std::string with2(const std::string &from, const std::string &to) { return with(base2, from, to); }

// Arms that this build's registry lacks, for the checks the registry cannot reach yet: a CUDA
// LayerNorm arm that declares two options, a forward-only one, and a CPU softmax arm.
prereg::arm_info make_arm(std::string device, std::string name, std::string op,
                          std::vector<prereg::pass_kind> passes,
                          std::vector<prereg::arm_option_decl> options) {
  prereg::arm_info a;
  a.name = std::move(name);
  a.device = std::move(device);
  a.op = std::move(op);
  a.dtypes = {prereg::dtype::fp32, prereg::dtype::fp16, prereg::dtype::bf16};
  a.has_backward = passes.size() == 2;
  a.allocates_fwd = false;
  a.allocates_bwd = false;
  a.max_cols = 8192;
  a.cols_multiple = 1;
  a.passes = std::move(passes);
  a.options = std::move(options);
  return a;
}

const std::vector<prereg::arm_info> &extra_arms() {
  using prereg::pass_kind;
  static const std::vector<prereg::arm_info> arms{
      make_arm("cuda", "layernorm.tiled", "layernorm", {pass_kind::fwd, pass_kind::fwd_bwd},
               {{"block", 256, "threads per block"}, {"unroll", 4, "rows per thread"}}),
      make_arm("cuda", "layernorm.fwdonly", "layernorm", {pass_kind::fwd}, {}),
      make_arm("cpu", "softmax.test", "softmax", {pass_kind::fwd, pass_kind::fwd_bwd}, {}),
  };
  return arms;
}

// The registry plus extra_arms().
const prereg::arm_info *lookup(std::string_view device, std::string_view kernel) {
  for (const auto &a : extra_arms())
    if (a.device == device && a.name == kernel)
      return &a;
  return prereg::find_arm(device, kernel);
}

prereg::protocol parse_with_extra(const std::string &yaml) {
  return prereg::parse_protocol(yaml, file, lookup);
}

void check_rejects_with_extra(const std::string &yaml, int line, int column,
                              const std::string &part) {
  try {
    (void)parse_with_extra(yaml);
    FAIL("accepted, expected: " << part);
  } catch (const prereg::error &e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(e.code() == prereg::exit_code::invalid);
    CHECK(e.where() == prereg::at(file, line, column));
    CHECK(message.find(part) != std::string::npos);
  }
}

} // namespace

TEST_CASE("schema 2 parses and normalises with axes and options") {
  const auto p = prereg::parse_protocol(base2, file);
  CHECK(p.schema == 2);
  CHECK(p.op == "layernorm");
  CHECK(p.rows == std::vector<std::int64_t>{128, 512, 1024, 4096, 16384, 65536});
  CHECK(p.cols == std::vector<std::int64_t>{1024});
  REQUIRE(p.arms.size() == 2);
  CHECK(p.arms[0].options.empty());

  // The v1 JSON with "prereg": 2, "axes" in place of "shapes" and every arm's "options".
  json expected = normalised(base);
  expected["prereg"] = 2;
  expected["axes"] = expected["shapes"];
  expected.erase("shapes");
  for (auto &arm : expected["arms"])
    arm["options"] = json::object();
  const json got = prereg::to_json(p);
  CHECK(got == expected);
  CHECK(got["arms"][0]["options"].is_object());
  CHECK(prereg::protocol_hash(p) != prereg::protocol_hash(prereg::parse_protocol(base, file)));

  SUBCASE("axes and at keys in any order and style, options: {} or left out") {
    const std::string text =
        with(with2("axes:\n  rows: [128, 512, 1024, 4096, 16384, 65536]\n  cols: [1024]\n",
                   "axes: {cols: [1024], rows: [128, 512, 1024, 4096, 16384, 65536]}\n"),
             "    repeat: 1\n", "    repeat: 1\n    options: {}\n");
    CHECK(normalised(text) == got);
  }
  SUBCASE("v1 keeps its JSON: no options key, shapes not axes") {
    const json v1 = normalised(base);
    CHECK(v1["prereg"] == 1);
    CHECK(v1.contains("shapes"));
    CHECK_FALSE(v1.contains("axes"));
    CHECK_FALSE(v1["arms"][0].contains("options"));
  }
  SUBCASE("round trip through JSON and canonical bytes") {
    CHECK(prereg::to_json(prereg::protocol_from_json(got, "protocol.json")) == got);
    const json reread = json::parse(prereg::canonical_json(got));
    CHECK(prereg::to_json(prereg::protocol_from_json(reread, "protocol.json")) == got);
  }
  SUBCASE("the sample v2 protocol") {
    const auto sample = prereg::parse_protocol(
        prereg::read_file(PREREG_TEST_DATA "/protocols/v2_example.yaml"), "v2_example.yaml");
    CHECK(sample.schema == 2);
    CHECK(sample.device == "cpu");
    CHECK(sample.rows == std::vector<std::int64_t>{64, 4096});
    const json j = prereg::to_json(sample);
    CHECK(j["axes"] == json::parse(R"({"rows": [64, 4096], "cols": [1024]})"));
    CHECK(j["arms"][1]["options"] == json::object());
    CHECK(prereg::to_json(prereg::protocol_from_json(j, "protocol.json")) == j);
  }
}

TEST_CASE("schema 2: axes and shapes belong to their own version") {
  check_rejects(with("prereg: 1", "prereg: 2"), 8, 1,
                "shapes is prereg: 1; prereg: 2 names the operation's axes: use axes:");
  check_rejects(with("shapes:", "axes:"), 8, 1, "axes needs prereg: 2");
  check_rejects(with("    repeat: 1", "    repeat: 1\n    options: {}"), 18, 5,
                "arms[0].options needs prereg: 2");
  check_rejects(with2("axes:\n", "axes: !!map\n"), 8, 7, "tags (!!map)");
  check_rejects(with2("  rows: [128, 512, 1024, 4096, 16384, 65536]\n  cols: [1024]\n", ""), 8, 1,
                "axes must be a mapping, got null");
  check_rejects(with2("  cols: [1024]", "  cols: [1024]\n  depth: [1]"), 11, 3,
                "unknown axis 'depth' in axes: operation layernorm has axes rows, cols");
  check_rejects(with2("  cols: [1024]\n", ""), 9, 3,
                "missing axis 'cols' in axes: operation layernorm has axes rows, cols");
  check_rejects(with2("rows: [128, 512,", "rows: [0, 512,"), 9, 10,
                "axes.rows must be an integer from 1 to 2147483648, got 0");
  check_rejects(with2("rows: [128, 512,", "rows: [128, 128,"), 9, 15, "axes.rows lists 128 twice");
  check_rejects(with2("cols: [1024]", "cols: []"), 10, 9, "axes.cols must not be empty");
  check_rejects(with2("{rows: 128, cols: 1024}", "{rows: 256, cols: 1024}"), 12, 25,
                "operating_point.rows 256 is not in axes.rows");
  check_rejects(with2("{rows: 128, cols: 1024}", "{rows: 128, cols: 1024, depth: 1}"), 12, 42,
                "unknown key 'depth' in operating_point (allowed: rows, cols)");
  check_rejects(with2("pass: fwd+bwd}", "pass: fwd+bwd, depth: 1}"), 36, 48,
                "unknown key 'depth' in predictions[0].at (allowed: rows, cols, pass)");
  check_rejects(with2("at: {rows: 128, cols", "at: {rows: 256, cols"), 36, 16,
                "predictions[0].at.rows selects 256");
  check_rejects(base2 + "colour: red\n", 38, 1,
                "unknown key 'colour' in the protocol (allowed: "
                "prereg, id, title, hypothesis, device, "
                "operation, dtype, axes, passes,");
  check_rejects(with2("    repeat: 1", "    repeats: 1"), 17, 5,
                "unknown key 'repeats' in arms[0] (allowed: id, kernel, launch, repeat, options, "
                "plugin, name, python, function)");
}

TEST_CASE("schema 2: arm options are checked against what the kernel declares") {
  SUBCASE("a kernel that declares none") {
    check_rejects(with2("    repeat: 1", "    repeat: 1\n    options: {block: 128}"), 18, 15,
                  "unknown option 'block' in arms[0].options: kernel 'layernorm.unfused' takes "
                  "no options");
    check_rejects(with2("    repeat: 1", "    repeat: 1\n    options: [1]"), 18, 14,
                  "arms[0].options must be a mapping of option names to numbers, got a list");
    check_rejects(with2("    repeat: 1", "    repeat: 1\n    options:"), 18, 5,
                  "arms[0].options must be a mapping of option names to numbers, got null");
  }
  const std::string tiled = with2("    kernel: layernorm.fused", "    kernel: layernorm.tiled");
  SUBCASE("declared options get their defaults, in declaration order") {
    const auto p = parse_with_extra(tiled);
    using opts = std::vector<std::pair<std::string, double>>;
    CHECK(p.arms[1].options == opts{{"block", 256}, {"unroll", 4}});
    CHECK(p.arms[0].options.empty());
    const json j = prereg::to_json(p);
    CHECK(j["arms"][1]["options"] == json::parse(R"({"block": 256.0, "unroll": 4.0})"));
    const auto set = parse_with_extra(with(tiled, "kernel: layernorm.tiled",
                                           "kernel: layernorm.tiled\n    options: {unroll: 8}"));
    CHECK(set.arms[1].options == opts{{"block", 256}, {"unroll", 8}});
    const json js = prereg::to_json(set);
    CHECK(js != j);
    CHECK(js["arms"][1]["options"]["unroll"] == 8.0);
    // Writing the default explicitly is the same protocol.
    CHECK(prereg::to_json(parse_with_extra(with(tiled, "kernel: layernorm.tiled",
                                                "kernel: layernorm.tiled\n    options: {block: "
                                                "256.0, unroll: 4e0}"))) == j);
    // The JSON round trip, through the canonical bytes too (256.0 is written 256 there).
    CHECK(prereg::to_json(prereg::protocol_from_json(js, "protocol.json", lookup)) == js);
    CHECK(prereg::to_json(prereg::protocol_from_json(json::parse(prereg::canonical_json(js)),
                                                     "protocol.json", lookup)) == js);
  }
  SUBCASE("unknown options and bad values") {
    check_rejects_with_extra(
        with(tiled, "kernel: layernorm.tiled", "kernel: layernorm.tiled\n    options: {blocks: 1}"),
        20, 15,
        "unknown option 'blocks' in arms[1].options: kernel 'layernorm.tiled' declares block, "
        "unroll");
    check_rejects_with_extra(
        with(tiled, "kernel: layernorm.tiled",
             "kernel: layernorm.tiled\n    options: {unroll: \"8\"}"),
        20, 23, "arms[1].options.unroll must be a number, got the quoted string \"8\"");
    check_rejects_with_extra(with(tiled, "kernel: layernorm.tiled",
                                  "kernel: layernorm.tiled\n    options: {unroll: .5}"),
                             20, 23, "arms[1].options.unroll must be a plain decimal number");
    check_rejects_with_extra(with(tiled, "kernel: layernorm.tiled",
                                  "kernel: layernorm.tiled\n    options: {unroll: 1, unroll: 2}"),
                             20, 26, "duplicate key 'unroll'");
  }
  SUBCASE("prereg: 1 runs a kernel's options at their defaults and does not write them") {
    const std::string v1 = with("    kernel: layernorm.fused", "    kernel: layernorm.tiled");
    const auto p = parse_with_extra(v1);
    using opts = std::vector<std::pair<std::string, double>>;
    CHECK(p.arms[1].options == opts{{"block", 256}, {"unroll", 4}});
    CHECK_FALSE(prereg::to_json(p)["arms"][1].contains("options"));
  }
  SUBCASE("errors in JSON name the pointer") {
    json b = prereg::to_json(parse_with_extra(tiled));
    b["arms"][1]["options"]["warps"] = 2;
    try {
      (void)prereg::protocol_from_json(b, "store/protocol.json", lookup);
      FAIL("accepted");
    } catch (const prereg::error &e) {
      CHECK(e.code() == prereg::exit_code::invalid);
      CHECK(e.where() == "store/protocol.json#/arms/1/options");
      CHECK(std::string(e.what()).find("unknown option 'warps'") != std::string::npos);
    }
  }
}

TEST_CASE("schema 2: operations and the arms that compute them") {
  const std::string softmax =
      with(with(with2("operation: layernorm", "operation: softmax"), "device: cuda", "device: cpu"),
           arms_block,
           "arms:\n  - id: unfused\n    kernel: softmax.test\n  - id: fused\n    kernel: "
           "softmax.test\n");
  SUBCASE("softmax is an operation; this build's registry has no softmax arm yet") {
    check_rejects(softmax, 15, 13, "unknown kernel 'softmax.test' for device cpu");
    const auto p = parse_with_extra(softmax);
    CHECK(p.op == "softmax");
    CHECK(prereg::to_json(p)["operation"] == "softmax");
    CHECK(prereg::to_json(prereg::protocol_from_json(prereg::to_json(p), "x", lookup)) ==
          prereg::to_json(p));
  }
  SUBCASE("an arm computes the protocol's operation") {
    check_rejects_with_extra(with(softmax, "    kernel: softmax.test\n  - id: fused",
                                  "    kernel: layernorm.unfused\n  - id: fused"),
                             15, 13,
                             "kernel 'layernorm.unfused' computes layernorm, but the protocol's "
                             "operation is softmax");
    check_rejects_with_extra(with2("    kernel: layernorm.fused", "    kernel: softmax.test"), 19,
                             13, "unknown kernel 'softmax.test' for device cuda");
    check_rejects_with_extra(
        with(with2("device: cuda", "device: cpu"), "    kernel: layernorm.fused",
             "    kernel: softmax.test"),
        19, 13,
        "kernel 'softmax.test' computes softmax, but the protocol's operation is layernorm");
  }
  SUBCASE("an arm runs every pass the protocol lists") {
    check_rejects_with_extra(with2("    kernel: layernorm.fused", "    kernel: layernorm.fwdonly"),
                             19, 13,
                             "kernel 'layernorm.fwdonly' has no backward pass, but passes lists "
                             "fwd+bwd");
    const std::string fwd_only =
        with(with(with2("    kernel: layernorm.fused", "    kernel: layernorm.fwdonly"),
                  "passes: [fwd, fwd+bwd]", "passes: [fwd]"),
             "pass: fwd+bwd}", "pass: fwd}");
    CHECK(parse_with_extra(fwd_only).arms[1].kernel == "layernorm.fwdonly");
  }
}

TEST_CASE("schema 2: arms from outside (plugin, python)") {
  const std::string plugin =
      with2("    kernel: layernorm.fused",
            "    plugin: build/libmine.so\n    name: my_ln\n    options: {b: 2, a: 1}");
  const auto p = prereg::parse_protocol(plugin, file);
  REQUIRE(p.arms.size() == 2);
  CHECK(p.arms[1].source == prereg::arm_source::plugin);
  CHECK(p.arms[1].file == "build/libmine.so");
  CHECK(p.arms[1].entry == "my_ln");
  CHECK(p.arms[1].kernel.empty());
  CHECK(p.arms[1].label() == "plugin build/libmine.so:my_ln");
  const json j = prereg::to_json(p);
  CHECK(j["arms"][1]["plugin"] == "build/libmine.so");
  CHECK(j["arms"][1]["name"] == "my_ln");
  CHECK_FALSE(j["arms"][1].contains("kernel"));
  CHECK(j["arms"][1]["options"] == json::parse(R"({"a": 1, "b": 2})"));
  CHECK(prereg::to_json(prereg::protocol_from_json(j, "protocol.json")) == j);

  const std::string python =
      with2("    kernel: layernorm.fused",
            "    python: ../arms/torch_norms.py\n    function: layernorm_eager");
  const auto q = prereg::parse_protocol(python, file);
  CHECK(q.arms[1].source == prereg::arm_source::python);
  CHECK(q.arms[1].entry == "layernorm_eager");
  CHECK(prereg::to_json(q)["arms"][1]["python"] == "../arms/torch_norms.py");
  CHECK(prereg::protocol_hash(p) != prereg::protocol_hash(q));

  SUBCASE("exactly one source, each with its own second key") {
    check_rejects(with2("    kernel: layernorm.fused", "    name: x"), 18, 5,
                  "arms[1] needs one of 'kernel', 'plugin' or 'python'");
    check_rejects(with2("    kernel: layernorm.fused",
                        "    kernel: layernorm.fused\n    python: a.py\n    function: f"),
                  18, 5, "arms[1] names more than one of 'kernel', 'plugin' and 'python'");
    check_rejects(with2("    kernel: layernorm.fused", "    plugin: a.so\n    function: f"), 20, 15,
                  "arms[1].function belongs to a python arm");
    check_rejects(with2("    kernel: layernorm.fused", "    plugin: a.so"), 18, 5,
                  "missing required key 'name' in arms[1]");
    check_rejects(with2("    kernel: layernorm.fused", "    python: ''\n    function: f"), 19, 13,
                  "arms[1].python must be a file path of 1 to 1024 characters");
    check_rejects(with2("    kernel: layernorm.fused", "    kernel: layernorm.fused\n    name: x"),
                  20, 11, "arms[1].name belongs to a plugin arm, not a kernel arm");
  }
  SUBCASE("prereg: 1 has no outside arms") {
    check_rejects(with("    kernel: layernorm.fused", "    plugin: a.so\n    name: x"), 19, 5,
                  "unknown key 'plugin' in arms[1]");
  }
}

TEST_CASE("every prereg: 1 protocol under protocols/ keeps its hash") {
  // Frozen facts: the hashes `prereg check` printed before schema 2 existed. A change here
  // would make every frozen copy and report of these protocols unreadable as the same protocol.
  const std::vector<std::pair<std::string, std::string>> frozen{
      {"protocols/cpu_smoke.yaml",
       "e6cd3057d2beab51dd9fdd41bc184060bcfea1ed579cebd12d0c41a7214bac18"},
      {"protocols/ln_batch1.yaml",
       "0d18189f5e8e8ec54a1516743e75446d59e6f2edf060596847795121af17f3d8"},
      {"protocols/ln_model_step.yaml",
       "7738f494891f325a740b42bfade713bcf13c35f3adb8561b981d66a4c1a063b0"},
      {"protocols/rmsnorm_qwen.yaml",
       "f86f842c1df0e22ff3b1631ed4213ce6849abff413f27db69975d7eed4ef9427"},
      {"protocols/bench/layernorm_fp32.yaml",
       "b3ff559eb215443e3a3c369244f013a4fee84e942eea5281e326b87f98f6e6c9"},
      {"protocols/bench/layernorm_graph.yaml",
       "111d6606dd9f744fd41ce914c3de47fb80b561c9a2b873ea981f3449eb10ade3"},
      {"protocols/bench/rmsnorm_fp16.yaml",
       "9ca8df6c0646b39f3b31bbb8843cc5790df1c15a7a654cc9f7074986fe35418b"},
  };
  for (const auto &[path, hash] : frozen) {
    CAPTURE(path);
    const auto p = prereg::parse_protocol(
        prereg::read_file(std::string(PREREG_SOURCE_DIR) + "/" + path), path);
    CHECK(p.schema == 1);
    CHECK(prereg::protocol_hash(p) == hash);
    // ... and reading the normalised JSON back gives the same hash.
    CHECK(prereg::protocol_hash(prereg::protocol_from_json(prereg::to_json(p), path)) == hash);
  }
}

TEST_CASE("schema 2: revision makes a new frozen version of the same experiment") {
  const json first = normalised(base2);
  // revision 1 is the first version: written or not, the same protocol (and hash).
  CHECK(normalised(with2("id: ln_batch1\n", "id: ln_batch1\nrevision: 1\n")) == first);
  CHECK_FALSE(first.contains("revision"));
  const json second = normalised(with2("id: ln_batch1\n", "id: ln_batch1\nrevision: 2\n"));
  CHECK(second.at("revision") == 2);
  CHECK(prereg::protocol_hash(second) != prereg::protocol_hash(first));
  const prereg::protocol back = prereg::protocol_from_json(second, "protocol.json");
  CHECK(back.revision == 2);
  CHECK(prereg::to_json(back) == second);
  check_rejects(with2("id: ln_batch1\n", "id: ln_batch1\nrevision: 0\n"), 3, 11,
                "revision must be an integer from 1 to 1000000, got 0");
  // prereg: 1 is frozen as a schema: revision is a prereg: 2 field.
  check_rejects(with("id: ln_batch1\n", "id: ln_batch1\nrevision: 2\n"), 3, 1,
                "revision needs prereg: 2");
}

TEST_CASE("schema 2: measurement.kernel_clock: false switches the clock off, true is the default") {
  const json on = normalised(base2);
  CHECK_FALSE(on.at("measurement").contains("kernel_clock"));
  // true is the default: written or not, the same protocol and hash.
  CHECK(normalised(with2("  l2_flush: true\n", "  l2_flush: true\n  kernel_clock: true\n")) == on);
  const json off =
      normalised(with2("  l2_flush: true\n", "  l2_flush: true\n  kernel_clock: false\n"));
  CHECK(off.at("measurement").at("kernel_clock") == false);
  CHECK(prereg::protocol_hash(off) != prereg::protocol_hash(on));
  const prereg::protocol back = prereg::protocol_from_json(off, "protocol.json");
  CHECK_FALSE(back.measurement.kernel_clock);
  CHECK(prereg::to_json(back) == off);
  // A prediction that reads the clock cannot be judged without it.
  const std::string off_text =
      with2("  l2_flush: true\n", "  l2_flush: true\n  kernel_clock: false\n");
  const auto e = parse_error(
      with(off_text, "expect: \"fused > unfused\"", "expect: \"gap_share(fused) > 50\""));
  REQUIRE(e.has_value());
  CHECK(std::string(e->what()).find("gap_share() reads the kernel clock, which "
                                    "measurement.kernel_clock: false switches off") !=
        std::string::npos);
  // prereg: 1 is frozen as a schema.
  const auto v1 =
      parse_error(with("  l2_flush: true\n", "  l2_flush: true\n  kernel_clock: false\n"));
  REQUIRE(v1.has_value());
  CHECK(std::string(v1->what()).find("measurement.kernel_clock needs prereg: 2") !=
        std::string::npos);
  const auto bad =
      parse_error(with2("  l2_flush: true\n", "  l2_flush: true\n  kernel_clock: 3\n"));
  REQUIRE(bad.has_value());
}

TEST_CASE("free-text fields have length limits") {
  const std::string long_title(257, 'x');
  check_rejects(with("\"LayerNorm at batch 1\"", "\"" + long_title + "\""), 3, 8,
                "title is 257 bytes long; the limit is 256 bytes");
  CHECK_NOTHROW(normalised(with("\"LayerNorm at batch 1\"", "\"" + std::string(256, 'x') + "\"")));
  check_rejects(with(hypothesis, "\"" + std::string(4097, 'h') + "\""), 4, 13,
                "hypothesis is 4097 bytes long; the limit is 4096 bytes");
  check_rejects(with(claim, "\"" + std::string(1025, 'c') + "\""), 35, 12,
                "predictions[0].claim is 1025 bytes long; the limit is 1024 bytes");
  const std::string long_expect = "\"fused > unfused" + std::string(1010, ' ') + "\"";
  check_rejects(with("\"fused > unfused\"", long_expect), 37, 13,
                "predictions[0].expect is 1025 bytes long; the limit is 1024 bytes");
}

TEST_CASE("the kernel clock's functions need prereg: 2") {
  check_rejects(with("expect: \"fused > unfused\"", "expect: \"gap_share(fused) > 50\""), 37, 13,
                "prediction P1: expect: gap_share() reads the kernel clock and needs prereg: 2");
  check_rejects(with("expect: \"fused > unfused\"", "expect: \"kernels(fused) < 2 and fused > 0\""),
                37, 13, "kernels() reads the kernel clock");
  check_rejects(
      with("expect: \"fused > unfused\"", "expect: \"kernel_share(fused, \\\"attn\\\") < 10\""), 37,
      13, "kernel_share(arm, \"label\") needs prereg: 2");
  for (const char *e :
       {"gap_share(fused) > 50", "kernels(fused) <= 1", "kernel_time(fused) < 0.9 * fused"}) {
    CAPTURE(e);
    const auto p = prereg::parse_protocol(
        with2("expect: \"fused > unfused\"", std::string("expect: \"") + e + "\""), file);
    CHECK(p.predictions.at(0).expect == e);
  }
  const auto ks = prereg::parse_protocol(
      with2("expect: \"fused > unfused\"", "expect: \"kernel_share(fused, \\\"attn\\\") < 10\""),
      file);
  CHECK(ks.predictions.at(0).expect == "kernel_share(fused, \"attn\") < 10");
  // The words are the language's: no arm may be named after them.
  check_rejects(with2("  - id: fused\n", "  - id: kernels\n"), 18, 9, "kernels");
  check_rejects(with2("  - id: fused\n", "  - id: kernel_share\n"), 18, 9, "kernel_share");
}
