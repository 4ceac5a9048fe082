// Tests of operation files' descriptors (spec/operation_file.hpp), their formulas
// (spec/op_formula.hpp) and the protocol's `operation: {python, name}` (docs/operations.md).
#include "prereg/error.hpp"
#include "spec/bytes_model.hpp"
#include "spec/op_formula.hpp"
#include "spec/operation_file.hpp"
#include "spec/protocol.hpp"

#include <doctest/doctest.h>

using namespace prereg;

namespace {

const std::vector<std::string> rc{"rows", "cols"};

std::uint64_t eval(const std::string &text, std::int64_t rows, std::int64_t cols, std::int64_t s) {
  const std::vector<std::int64_t> extents{rows, cols};
  return eval_formula(text, {&rc, &extents, s}, "f");
}

json doubled() {
  return json::parse(R"({"name": "doubled", "axes": ["rows", "cols"],
    "tensors": [{"name": "x", "role": "input", "dims": ["rows", "cols"], "passes": ["fwd"],
                 "dist": {"lo": -1, "hi": 1}},
                {"name": "y", "role": "output", "dims": ["rows", "cols"], "passes": ["fwd"]}],
    "passes": {"fwd": {"bytes": "2 * rows * cols * s", "flops": "rows * cols"}},
    "tolerance": {"fp16": {"rtol": 0.002, "atol": 0.003}},
    "reference": "double"})");
}

std::string refusal(json d) {
  try {
    (void)operation_from_json(d, "ops.py", "ops.py");
  } catch (const error &e) {
    return e.what();
  }
  return "accepted";
}

const char *protocol_yaml = R"(prereg: 2
id: op_file
title: t
hypothesis: h
device: cpu
operation: {python: ops.py, name: doubled}
dtype: fp16
axes:
  rows: [4]
  cols: [8]
passes: [fwd]
arms:
  - {id: np, python: arms.py, function: double}
measurement:
  repetitions: 3
predictions:
  - {id: P1, claim: c, expect: "gbps(np) > 0"}
)";

} // namespace

TEST_CASE("formulas: arithmetic over the axes and s") {
  CHECK(eval("3 * rows * cols * s", 2, 4, 2) == 48);
  CHECK(eval("(rows + 1) * (cols - 1)", 2, 4, 1) == 9);
  CHECK(eval("rows * cols / 2", 2, 4, 1) == 4);
  CHECK(eval("  7 ", 1, 1, 1) == 7);
  CHECK_THROWS_WITH(
      eval("rows * width", 2, 4, 1),
      doctest::Contains("names 'width', which is neither an axis (rows, cols) nor s"));
  CHECK_THROWS_WITH(eval("rows / 3", 2, 4, 1), doctest::Contains("not exact"));
  CHECK_THROWS_WITH(eval("rows / 0", 2, 4, 1), doctest::Contains("divides by zero"));
  CHECK_THROWS_WITH(eval("rows - cols", 2, 4, 1), doctest::Contains("is negative"));
  CHECK_THROWS_WITH(eval("rows * (cols", 2, 4, 1), doctest::Contains("lacks a ')'"));
  CHECK_THROWS_WITH(eval("rows ** 2", 2, 4, 1), doctest::Contains("unexpected '*'"));
  CHECK_THROWS_WITH(eval("99999999999 * 99999999999", 1, 1, 1),
                    doctest::Contains("overflows 64 bits"));
}

TEST_CASE("a descriptor reads strictly, each refusal naming the operation") {
  const operation_desc op = operation_from_json(doubled(), "ops.py", "ops.py");
  CHECK(op.outside);
  CHECK(op.reference_name == "double");
  CHECK(op.tensors.size() == 2);
  CHECK(op.tensors[1].checked);
  CHECK_FALSE(op.tensors[0].checked);
  const shape s = op.shape_of(4, 8);
  CHECK(op.bytes_per_invocation(dtype::fp16, pass_kind::fwd, s) == 128);
  CHECK(op.flops_per_invocation(dtype::fp16, pass_kind::fwd, s) == 32);
  CHECK_FALSE(op.flops_per_invocation(dtype::fp16, pass_kind::fwd_bwd, s).has_value());

  json d = doubled();
  d["tensors"][0]["role"] = "inout";
  CHECK(refusal(d) == "operation doubled: tensor x has the unknown role 'inout' (roles: input, "
                      "output, saved)");
  d = doubled();
  d["tensors"][1]["dims"] = {"rows", "depth"};
  CHECK(refusal(d) ==
        "operation doubled: tensor y has dim 'depth', which names no axis (axes: rows, cols)");
  d = doubled();
  d["passes"]["fwd"]["bytes"] = "rows * width";
  CHECK(refusal(d) == "operation doubled: the bytes formula of pass fwd 'rows * width' names "
                      "'width', which is neither an axis (rows, cols) nor s");
  d = doubled();
  d["tensors"][0].erase("dist");
  CHECK(refusal(d) == "operation doubled: input x lacks 'dist' (how it is drawn: {lo, hi})");
  d = doubled();
  d["tensors"][1]["passes"] = {"bwd"};
  CHECK(refusal(d) == "operation doubled: a tensor lists bwd, but passes has no fwd+bwd");
  d = doubled();
  d["colour"] = 1;
  CHECK(refusal(d).find("unknown key 'colour' in the declaration") != std::string::npos);
  d = doubled();
  d["tensors"][1]["name"] = "x";
  CHECK(refusal(d) == "operation doubled: two tensors are named x");
  d = doubled();
  d["tensors"][1]["name"] = "on_device";
  CHECK(refusal(d) == "operation doubled: tensors[1].name 'on_device' is the reference's own "
                      "attribute");
}

TEST_CASE("the built-in operations are described in the operation file's form") {
  for (const auto &builtin : all_operations()) {
    CAPTURE(builtin.name);
    json d = operation_to_json(builtin);
    CHECK(d["reference"] == "compiled");
    d["name"] = builtin.name + "_described";
    const operation_desc op = operation_from_json(d, "", "builtin");
    REQUIRE(op.tensors.size() == builtin.tensors.size());
    for (std::size_t i = 0; i < op.tensors.size(); ++i) {
      CHECK(op.tensors[i].role == builtin.tensors[i].role);
      CHECK(op.tensors[i].dims == builtin.tensors[i].dims);
      CHECK(op.tensors[i].fwd == builtin.tensors[i].fwd);
      CHECK(op.tensors[i].bwd == builtin.tensors[i].bwd);
      CHECK(op.tensors[i].produced_by_bwd == builtin.tensors[i].produced_by_bwd);
      CHECK(op.tensors[i].checked == builtin.tensors[i].checked);
      CHECK(op.tensors[i].element == builtin.tensors[i].element);
    }
    CHECK(op.passes == builtin.passes);
    for (const auto pass : builtin.passes)
      for (const auto type : {dtype::fp32, dtype::bf16})
        CHECK(op.bytes_per_invocation(type, pass, op.shape_of(3, 5)) ==
              builtin.bytes_per_invocation(type, pass, builtin.shape_of(3, 5)));
  }
}

TEST_CASE("a protocol names an operation file; the registered descriptor decides") {
  // Before the file is read (check/freeze read it in a child): a stand-in over rows and cols.
  const protocol before = parse_protocol(protocol_yaml, "p.yaml");
  CHECK(before.op == "doubled");
  CHECK(before.op_file == "ops.py");
  CHECK(before.correctness.rtol == doctest::Approx(1e-3)); // the dtype's default
  const json body = to_json(before);
  CHECK(body["operation"] == json({{"python", "ops.py"}, {"name", "doubled"}}));

  (void)register_outside_operation(operation_from_json(doubled(), "ops.py", "ops.py"));
  const protocol after = parse_protocol(protocol_yaml, "p.yaml");
  CHECK(after.correctness.rtol == doctest::Approx(0.002)); // the file's tolerance for fp16
  CHECK(after.correctness.atol == doctest::Approx(0.003));
  CHECK(bytes_per_invocation("doubled", dtype::fp16, pass_kind::fwd, 4, 8) == 128);
  const protocol again = protocol_from_json(to_json(after), "body");
  CHECK(to_json(again) == to_json(after));

  std::string yaml = protocol_yaml;
  yaml.replace(yaml.find("passes: [fwd]"), 13, "passes: [fwd+bwd]");
  CHECK_THROWS_WITH(
      (void)parse_protocol(yaml, "p.yaml"),
      doctest::Contains("passes lists fwd+bwd, which operation doubled does not have"));
  yaml = protocol_yaml;
  yaml.replace(yaml.find("prereg: 2"), 9, "prereg: 1");
  CHECK_THROWS((void)parse_protocol(yaml, "p.yaml"));
  yaml = protocol_yaml;
  yaml.replace(yaml.find("name: doubled"), 13, "name: softmax");
  CHECK_THROWS_WITH((void)parse_protocol(yaml, "p.yaml"),
                    doctest::Contains("operation.name softmax is a built-in operation"));
  json builtin_name = doubled();
  builtin_name["name"] = "layernorm";
  CHECK_THROWS_WITH(
      (void)register_outside_operation(operation_from_json(builtin_name, "ops.py", "ops.py")),
      doctest::Contains("operation layernorm: the name is a built-in operation's"));
}
