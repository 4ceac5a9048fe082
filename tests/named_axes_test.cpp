// Tests of operations over named axes (not rows x cols): the cell key's JSON and label, the
// protocol's axes, `at`, operating point and plan order, the bytes of a named cell, the report
// model's round trip of a named key.
#include "model/report_model.hpp"
#include "prereg/error.hpp"
#include "spec/bytes_model.hpp"
#include "spec/operation_file.hpp"
#include "spec/protocol.hpp"
#include "spec/records.hpp"
#include "spec/shard.hpp"

#include <doctest/doctest.h>

using namespace prereg;

namespace {

// A RoPE-like operation over three axes: x [b, n, d] and cos [n, d] in, y [b, n, d] out.
json rotary() {
  return json::parse(R"({"name": "rotary3", "axes": ["b", "n", "d"],
    "tensors": [{"name": "x", "role": "input", "dims": ["b", "n", "d"], "passes": ["fwd"],
                 "dist": {"lo": -1, "hi": 1}},
                {"name": "cos", "role": "input", "dims": ["n", "d"], "passes": ["fwd"],
                 "dist": {"lo": -1, "hi": 1}},
                {"name": "y", "role": "output", "dims": ["b", "n", "d"], "passes": ["fwd"]}],
    "passes": {"fwd": {"flops": "2 * b * n * d"}},
    "reference": "rotary"})");
}

const char *named_yaml = R"(prereg: 2
id: named
title: t
hypothesis: h
device: cpu
operation: {python: ops.py, name: rotary3}
dtype: fp32
axes:
  d: [64, 128]
  b: [2]
  n: [16, 8]
passes: [fwd]
operating_point: {b: 2, n: 8, d: 128}
arms:
  - id: one
    python: arms.py
    function: one
  - id: two
    python: arms.py
    function: two
measurement:
  repetitions: 3
predictions:
  - id: P1
    claim: c
    at: {n: 8, d: [128]}
    expect: gbps(one) > 0
)";

const protocol &named_protocol() {
  static const protocol p = [] {
    (void)register_outside_operation(operation_from_json(rotary(), "ops.py", "ops.py"));
    return parse_protocol(named_yaml, "p.yaml");
  }();
  return p;
}

cell_key named_key(std::int64_t b, std::int64_t s, std::int64_t d) {
  return {"one", pass_kind::fwd, 0, 0, {{"b", b}, {"n", s}, {"d", d}}};
}

} // namespace

TEST_CASE("a rows x cols key keeps its JSON and label; a named key names its axes in order") {
  const cell_key old{"fused", pass_kind::fwd_bwd, 128, 1024, {}};
  CHECK(to_json(old) ==
        json({{"arm", "fused"}, {"pass", "fwd+bwd"}, {"rows", 128}, {"cols", 1024}}));
  CHECK(cell_label(old) == "fused fwd+bwd 128x1024");
  const cell_key k = named_key(8, 4096, 64);
  CHECK(k.named());
  CHECK(cell_label(k) == "one fwd b=8 n=4096 d=64");
  CHECK(to_json(k) == json::parse(R"({"arm": "one", "pass": "fwd", "shape": [
      {"axis": "b", "extent": 8}, {"axis": "n", "extent": 4096}, {"axis": "d", "extent": 64}]})"));
  cell_key back{"one", pass_kind::fwd, 0, 0, {}};
  CHECK(read_shape_json(to_json(k), true, back).empty());
  CHECK(back == k);
  cell_key bad;
  CHECK(read_shape_json(to_json(k), false, bad) == "must name its shape as rows and cols");
  CHECK(read_shape_json(to_json(old), true, bad).find("not rows and cols") != std::string::npos);
  json zero = to_json(k);
  zero["shape"][1]["extent"] = 0;
  CHECK(!read_shape_json(zero, true, bad).empty());
  CHECK(flat_rows_cols(k) == std::pair<std::int64_t, std::int64_t>{8 * 4096, 64});
  CHECK(flat_rows_cols(old) == std::pair<std::int64_t, std::int64_t>{128, 1024});
  CHECK(named_key(2, 3, 4) != named_key(3, 2, 4));
  CHECK(shape_seed(7, pass_kind::fwd, named_key(2, 3, 4)) !=
        shape_seed(7, pass_kind::fwd, named_key(3, 2, 4)));
}

TEST_CASE("a protocol over named axes: extents in the operation's order, at, operating point") {
  const protocol &p = named_protocol();
  REQUIRE(p.axes.size() == 3);
  CHECK(p.axes[0].name == "b"); // the operation's order, not the protocol's
  CHECK(p.axes[1].name == "n");
  CHECK(p.axes[2].name == "d");
  CHECK(p.axes[1].extents == std::vector<std::int64_t>{16, 8});
  CHECK(p.rows.empty());
  CHECK(p.shape_count() == 4);
  CHECK(p.named_operating_point == std::vector<std::int64_t>{2, 8, 128});
  const json body = to_json(p);
  CHECK(body["axes"] == json::parse(R"({"b": [2], "n": [16, 8], "d": [64, 128]})"));
  CHECK(body["operating_point"] == json::parse(R"({"b": 2, "n": 8, "d": 128})"));
  CHECK(body["predictions"][0]["at"] ==
        json::parse(R"({"b": [2], "n": [8], "d": [128], "pass": ["fwd"]})"));
  const protocol again = protocol_from_json(body, "body");
  CHECK(to_json(again) == body);
  CHECK(p.predictions[0].at.shapes() == 1);
  CHECK(selects(p, p.predictions[0].at, named_key(2, 8, 128)));
  CHECK_FALSE(selects(p, p.predictions[0].at, named_key(2, 16, 128)));
}

TEST_CASE("the plan over named axes: arms x passes x axis1 x ... x axisN, first axis outermost") {
  const protocol &p = named_protocol();
  const auto cells = all_cells(p);
  REQUIRE(cells.size() == 8);
  CHECK(cell_label(cells[0]) == "one fwd b=2 n=16 d=64");
  CHECK(cell_label(cells[1]) == "one fwd b=2 n=16 d=128");
  CHECK(cell_label(cells[2]) == "one fwd b=2 n=8 d=64");
  CHECK(cell_label(cells[3]) == "one fwd b=2 n=8 d=128");
  CHECK(cell_label(cells[4]) == "two fwd b=2 n=16 d=64");
  const auto groups = shape_groups(p);
  REQUIRE(groups.size() == 4);
  CHECK(groups[1].cells.size() == 2);
  CHECK(groups[1].holds(cells[5]));
  const operation_desc &op = operation_named("rotary3");
  CHECK(key_shape(op, cells[3]).extents == std::vector<std::int64_t>{2, 8, 128});
  CHECK(key_of("one", pass_kind::fwd, op, key_shape(op, cells[3])) == cells[3]);
  // x and y [b, n, d] and cos [n, d], fp32: (2 * 2*8*128 + 8*128) * 4 bytes
  CHECK(bytes_per_step("rotary3", dtype::fp32, cells[3], 1) == (2 * 2 * 8 * 128 + 8 * 128) * 4);
}

TEST_CASE("a protocol over named axes refuses what it must") {
  (void)named_protocol(); // registers rotary3
  const auto refusal = [](const std::string &from, const std::string &to) {
    std::string yaml = named_yaml;
    yaml.replace(yaml.find(from), from.size(), to);
    try {
      (void)parse_protocol(yaml, "p.yaml");
    } catch (const error &e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refusal("  b: [2]\n", "")
            .find("missing axis 'b' in axes: operation rotary3 has axes b, "
                  "n, d") != std::string::npos);
  CHECK(refusal("  b: [2]\n", "  b: [2]\n  rows: [4]\n").find("unknown axis 'rows'") !=
        std::string::npos);
  CHECK(refusal("{b: 2, n: 8, d: 128}", "{b: 2, n: 8}").find("operating_point") !=
        std::string::npos);
  CHECK(refusal("{b: 2, n: 8, d: 128}", "{b: 2, n: 4, d: 128}")
            .find("operating_point.n 4 is not in axes.n") != std::string::npos);
  CHECK(refusal("at: {n: 8, d: [128]}", "at: {n: 3}").find("selects 3") != std::string::npos);
  CHECK(refusal("at: {n: 8, d: [128]}", "at: {rows: 3}").find("rows") != std::string::npos);
}

TEST_CASE("a named key round-trips through the report model's JSON") {
  report_correctness c;
  c.key = named_key(2, 8, 64);
  CHECK(cell_key_from_json(to_json(c.key), "cell", "") == c.key);
  prediction_result r{"P1", "c", "e", verdict_kind::confirmed, {}, ""};
  r.cells.push_back({pass_kind::fwd, 0, 0, 0.01, c.key.shape});
  const json pj = to_json(r);
  CHECK(pj["cells"][0] == json::parse(R"({"pass": "fwd", "p": 0.01, "shape": [
      {"axis": "b", "extent": 2}, {"axis": "n", "extent": 8}, {"axis": "d", "extent": 64}]})"));
  CHECK(report_schema_version_named == report_schema_version + 1);
}
