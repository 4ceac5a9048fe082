// Tests of the element types beyond fp32/fp16/bf16 (docs/operations.md, "Element types"): fp8
// rounding and bits, integer and bool storage, each type's poison, fills, the descriptor's new
// keys (element, int and index_of dists, 0-dim dims, s_NAME, fp8 tolerances) and every refusal.
#include "arms/outside_common.hpp"
#include "base/rng.hpp"
#include "device/device.hpp"
#include "prereg/error.hpp"
#include "spec/op_formula.hpp"
#include "spec/operation_file.hpp"
#include "spec/protocol.hpp"
#include "spec/reference.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace prereg;

namespace {

/// An operation with a tensor of every new kind: int64 targets over the axes, int32 indices into
/// a table's axis, an fp8 input, bool and uint8 inputs, a 0-dim fp32 scale and a 0-dim output.
json typed() {
  return json::parse(R"({"name": "typed", "axes": ["rows", "vocab"],
    "tensors": [
      {"name": "x", "role": "input", "dims": ["rows", "vocab"], "passes": ["fwd"],
       "dist": {"lo": -1, "hi": 1}},
      {"name": "targets", "role": "input", "dims": ["rows"], "element": "int64",
       "passes": ["fwd"], "dist": {"int": [0, "vocab"]}},
      {"name": "ids", "role": "input", "dims": ["rows"], "element": "int32", "passes": ["fwd"],
       "dist": {"index_of": ["x", "vocab"]}},
      {"name": "w", "role": "input", "dims": ["vocab"], "element": "fp8_e4m3", "passes": ["fwd"],
       "dist": {"lo": -448, "hi": 448}},
      {"name": "mask", "role": "input", "dims": ["rows"], "element": "bool", "passes": ["fwd"],
       "dist": {"int": [0, 2]}},
      {"name": "small", "role": "input", "dims": ["rows"], "element": "int8", "passes": ["fwd"],
       "dist": {"int": [-5, "rows - 5"]}},
      {"name": "scale", "role": "input", "dims": [], "element": "fp32", "passes": ["fwd"],
       "dist": {"lo": 0.5, "hi": 2}},
      {"name": "loss", "role": "output", "dims": [], "element": "fp32", "passes": ["fwd"]},
      {"name": "q", "role": "output", "dims": ["rows", "vocab"], "element": "fp8_e5m2",
       "passes": ["fwd"]},
      {"name": "count", "role": "output", "dims": [], "element": "int64", "passes": ["fwd"]}],
    "passes": {"fwd": {"bytes": "rows * vocab * s + rows * s_targets + rows * s_ids + s_loss",
                       "flops": "rows * vocab"}},
    "tolerance": {"fp8_e5m2": {"rtol": 0.125, "atol": 0}, "fp32": {"rtol": 1e-5, "atol": 0}},
    "reference": "ref"})");
}

std::string refusal(const json &d) {
  try {
    (void)operation_from_json(d, "ops.py", "ops.py");
  } catch (const error &e) {
    return e.what();
  }
  return "accepted";
}

} // namespace

TEST_CASE("fp8: e4m3 (fn) and e5m2 bits, rounding to nearest even, saturation") {
  using reference::from_fp8;
  using reference::to_fp8;
  CHECK(to_fp8(1.0, dtype::fp8_e4m3) == 0x38);
  CHECK(to_fp8(-2.0, dtype::fp8_e4m3) == 0xc0);
  CHECK(to_fp8(448.0, dtype::fp8_e4m3) == 0x7e);
  CHECK(to_fp8(460.0, dtype::fp8_e4m3) == 0x7e);  // below the tie at 464: 448
  CHECK(to_fp8(464.0, dtype::fp8_e4m3) == 0x7e);  // the tie goes to the even 448
  CHECK(to_fp8(470.0, dtype::fp8_e4m3) == 0x7f);  // past it: NaN (no infinity in e4m3 fn)
  CHECK(to_fp8(1.0625, dtype::fp8_e4m3) == 0x38); // a tie between 1 and 1.125: even (1)
  CHECK(to_fp8(1.1875, dtype::fp8_e4m3) == 0x3a); // a tie between 1.125 and 1.25: even (1.25)
  CHECK(to_fp8(std::ldexp(1.0, -9), dtype::fp8_e4m3) == 0x01);  // the smallest subnormal
  CHECK(to_fp8(std::ldexp(1.0, -11), dtype::fp8_e4m3) == 0x00); // below half of it: zero
  CHECK(to_fp8(1.0, dtype::fp8_e5m2) == 0x3c);
  CHECK(to_fp8(57344.0, dtype::fp8_e5m2) == 0x7b);
  CHECK(to_fp8(1e6, dtype::fp8_e5m2) == 0x7c); // infinity
  CHECK(std::isinf(from_fp8(0xfc, dtype::fp8_e5m2)));
  CHECK(std::isnan(from_fp8(0x7f, dtype::fp8_e4m3)));
  CHECK(from_fp8(0x7e, dtype::fp8_e4m3) == 448.0);
  CHECK(from_fp8(0x01, dtype::fp8_e5m2) == std::ldexp(1.0, -16));
  for (const dtype t : {dtype::fp8_e4m3, dtype::fp8_e5m2}) {
    CAPTURE(to_string(t));
    int finite = 0;
    for (int b = 0; b < 256; ++b) {
      const double v = from_fp8(static_cast<std::uint8_t>(b), t);
      if (std::isnan(v) || (b & 0x7f) == 0)
        continue;
      ++finite;
      CHECK(to_fp8(v, t) == b); // every finite code round-trips
      CHECK(reference::round_to(v, t) == v);
    }
    CHECK(finite ==
          (t == dtype::fp8_e4m3 ? 252 : 248)); // less 2 zeros and the NaNs (e4m3 2, e5m2 6)
  }
  CHECK(reference::largest_finite(dtype::fp8_e4m3) == 448.0);
  CHECK(reference::largest_finite(dtype::fp8_e5m2) == 57344.0);
}

TEST_CASE("fp8 fill: values inside the declared range, a fallback where rounding leaves it") {
  // [0.3, 0.34]: e4m3 holds 0.3125 only; 0.34 rounds to nearest 0.34375, outside: moved in.
  CHECK(reference::fp8_inside(0.34, 0.3, 0.34, dtype::fp8_e4m3) == 0.3125);
  CHECK(reference::fp8_inside(0.301, 0.3, 0.34, dtype::fp8_e4m3) == 0.3125);
  CHECK(reference::fp8_fallback(0.3, 0.34, dtype::fp8_e4m3) == 0.3125);
  CHECK(reference::fp8_fallback(0.31, 0.3115, dtype::fp8_e4m3) == 0.0); // no value inside
  CHECK(reference::fp8_fallback(-1e-6, 1e-6, dtype::fp8_e4m3) == 0.0);
  CHECK(reference::fp8_fallback(-0.01, 0.01, dtype::fp8_e4m3) == -5 * std::ldexp(1.0, -9));
  CHECK(reference::fp8_fallback(0, 0.01, dtype::fp8_e4m3) == 5 * std::ldexp(1.0, -9)); // 0 is not
}

TEST_CASE("integers and bool: storage, limits, and every type's poison") {
  const std::vector<double> v{-128, -1, 0, 127};
  CHECK(reference::unpack(reference::pack(v, dtype::int8), dtype::int8) == v);
  const std::vector<double> big{-9007199254740992.0, 0, 9007199254740992.0};
  CHECK(reference::unpack(reference::pack(big, dtype::int64), dtype::int64) == big);
  CHECK(reference::unpack(reference::pack({0, 255}, dtype::uint8), dtype::uint8) ==
        std::vector<double>{0, 255});
  CHECK(reference::unpack(reference::pack({-2147483648.0}, dtype::int32), dtype::int32)[0] ==
        -2147483648.0);
  CHECK(reference::unpack(reference::pack({0, 1}, dtype::boolean), dtype::boolean) ==
        std::vector<double>{0, 1});
  CHECK(reference::integer_limits(dtype::int8) == std::pair{-128.0, 127.0});
  CHECK(reference::integer_limits(dtype::int64).second == 9007199254740992.0);
  CHECK(reference::poison_bits(dtype::int64) == 0x8000000000000000ull);
  CHECK(reference::poison_bits(dtype::boolean) == 0xa5u);
  for (const dtype t : {dtype::fp8_e4m3, dtype::fp8_e5m2, dtype::int8, dtype::uint8, dtype::int32,
                        dtype::int64, dtype::boolean}) {
    CAPTURE(to_string(t));
    const auto bytes = reference::poison(3, t);
    REQUIRE(bytes.size() == 3 * element_bytes(t));
    for (const double d : reference::unpack_output(bytes, t))
      CHECK(reference::is_poison(d)); // an unwritten output, as a float poison reads
    CHECK(reference::is_poison_element(bytes.data() + element_bytes(t), t));
    // A written value is not the poison.
    const auto one = reference::pack({1.0}, t);
    CHECK_FALSE(reference::is_poison(reference::unpack_output(one, t)[0]));
  }
  // An input of the type's least value reads as the value (only outputs are poisoned).
  CHECK(reference::unpack(reference::pack({-128}, dtype::int8), dtype::int8)[0] == -128);
  CHECK(reference::is_poison(
      reference::unpack_output(reference::pack({-128}, dtype::int8), dtype::int8)[0]));
}

TEST_CASE("DLPack types for plugins, uint8 capsules for Python's bool and fp8 views") {
  using outside::capsule_type;
  using outside::dl_type;
  const auto is = [](DLDataType d, unsigned code, unsigned bits) {
    return d.code == code && d.bits == bits && d.lanes == 1;
  };
  CHECK(is(dl_type(dtype::int8), kDLInt, 8));
  CHECK(is(dl_type(dtype::uint8), kDLUInt, 8));
  CHECK(is(dl_type(dtype::int32), kDLInt, 32));
  CHECK(is(dl_type(dtype::int64), kDLInt, 64));
  CHECK(is(dl_type(dtype::boolean), 6, 8));   // kDLBool (DLPack 0.8)
  CHECK(is(dl_type(dtype::fp8_e4m3), 10, 8)); // kDLFloat8_e4m3fn (DLPack 1.1)
  CHECK(is(dl_type(dtype::fp8_e5m2), 12, 8)); // kDLFloat8_e5m2
  CHECK(is(dl_type(dtype::bf16), kDLBfloat, 16));
  CHECK(is(capsule_type(dtype::boolean), kDLUInt, 8));
  CHECK(is(capsule_type(dtype::fp8_e4m3), kDLUInt, 8));
  CHECK(is(capsule_type(dtype::int64), kDLInt, 64));
}

TEST_CASE("a descriptor with integer, fp8, bool and 0-dim tensors") {
  const operation_desc op = operation_from_json(typed(), "ops.py", "ops.py");
  CHECK(op.tensors[1].type(dtype::bf16) == dtype::int64);
  CHECK(op.tensors[0].type(dtype::bf16) == dtype::bf16);
  CHECK(op.tensors[1].dist.kind == dist_kind::integer);
  CHECK(op.tensors[2].dist.kind == dist_kind::index_of);
  CHECK(op.tensors[6].dims.empty());
  const shape s{{6, 10}};        // rows, vocab
  CHECK(op.elements(6, s) == 1); // a 0-dim tensor holds one element
  CHECK(op.elements(7, s) == 1);
  // rows vocab s + rows 8 + rows 4 + 4
  CHECK(op.bytes_per_invocation(dtype::bf16, pass_kind::fwd, s) == 6 * 10 * 2 + 48 + 24 + 4);
  const input_distribution t = op.dist_at(1, s);
  CHECK(t.lo == 0);
  CHECK(t.hi == 10);
  CHECK(op.dist_at(2, s).hi == 10); // ids index x's vocab axis
  CHECK(op.dist_at(5, s).lo == -5); // "-5" and "rows - 5"
  CHECK(op.dist_at(5, s).hi == 1);
  // Tolerances: exact for integers, the file's for fp8, the protocol's for the rest.
  const op_tolerance proto{dtype::bf16, 0.01, 0.02};
  CHECK(op.tolerance_of(9, proto, dtype::bf16).rtol == 0);
  CHECK(op.tolerance_of(8, proto, dtype::bf16).rtol == 0.125);
  CHECK(op.tolerance_of(7, proto, dtype::bf16).rtol == 0.01);
  // The descriptor's JSON round-trips, bounds normalised (integers as numbers).
  const json j = operation_to_json(op);
  CHECK(j["tensors"][1]["dist"] == json::parse(R"({"int": [0, "vocab"]})"));
  CHECK(j["tensors"][5]["dist"] == json::parse(R"({"int": [-5, "rows - 5"]})"));
  CHECK(j["tensors"][2]["dist"] == json::parse(R"({"index_of": ["x", "vocab"]})"));
  CHECK(j["tensors"][6]["dims"] == json::array());
  CHECK(j["tensors"][3]["element"] == "fp8_e4m3");
  CHECK(j["tensors"][4]["element"] == "bool");
  CHECK(operation_to_json(operation_from_json(j, "ops.py", "ops.py")) == j);
}

TEST_CASE("an existing declaration keeps its descriptor byte for byte") {
  const json d = json::parse(R"({"name": "old", "axes": ["rows", "cols"],
    "tensors": [{"name": "x", "role": "input", "dims": ["rows", "cols"], "passes": ["fwd"],
                 "dist": {"lo": -1, "hi": 1, "row_offset": 2}},
                {"name": "m", "role": "saved", "dims": ["rows"], "element": "fp32",
                 "passes": ["fwd"]},
                {"name": "y", "role": "output", "dims": ["rows", "cols"], "passes": ["fwd"]}],
    "passes": {"fwd": {"bytes": "2 * rows * cols * s"}}, "reference": "r"})");
  CHECK(
      canonical_json(operation_to_json(operation_from_json(d, "f", "f"))) ==
      R"({"axes":["rows","cols"],"eps":0,"name":"old","passes":{"fwd":{"bytes":"2 * rows * cols * s"}},)"
      R"("reference":"r","summary":"","tensors":[{"dims":["rows","cols"],"dist":{"hi":1,"lo":-1,)"
      R"("row_offset":2},"element":"dtype","name":"x","passes":["fwd"],"role":"input"},)"
      R"({"dims":["rows"],"element":"fp32","name":"m","passes":["fwd"],"role":"saved"},)"
      R"({"dims":["rows","cols"],"element":"dtype","name":"y","passes":["fwd"],"role":"output"}],)"
      R"("tolerance":{}})");
}

TEST_CASE("every bad declaration of a type is refused, naming the operation and tensor") {
  json d = typed();
  d["tensors"][1]["element"] = "int16";
  CHECK(refusal(d) == "operation typed: tensor targets has the unknown element 'int16' (elements: "
                      "dtype (the protocol's), fp32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8, uint8, "
                      "int32, int64, bool)");
  d = typed();
  d["tensors"][5]["dist"] = json::parse(R"({"int": [0, 300]})");
  CHECK(refusal(d) == "operation typed: dist of small: [0, 300) is outside int8 (its values: -128 "
                      "to 127)");
  d = typed();
  d["tensors"][4]["dist"] = json::parse(R"({"int": [0, 3]})");
  CHECK(refusal(d) == "operation typed: dist of mask: [0, 3) is outside bool (its values: 0 to 1)");
  d = typed();
  d["tensors"][5]["dist"] = json::parse(R"({"int": [4, 4]})");
  CHECK(refusal(d) == "operation typed: dist of small: [4, 4) is empty");
  d = typed();
  d["tensors"][2]["dist"] = json::parse(R"({"index_of": ["table", "vocab"]})");
  CHECK(refusal(d) ==
        "operation typed: dist of ids: index_of names 'table', which is no other tensor of the "
        "operation");
  d = typed();
  d["tensors"][2]["dist"] = json::parse(R"({"index_of": ["w", "rows"]})");
  CHECK(refusal(d) == "operation typed: dist of ids: index_of indexes axis 'rows', which is not a "
                      "dim of w (dims: vocab)");
  d = typed();
  d["tensors"][2]["dist"] = json::parse(R"({"index_of": ["scale", "rows"]})");
  CHECK(refusal(d).find("which is not a dim of scale (dims: none: a 0-dim tensor)") !=
        std::string::npos);
  d = typed();
  d["tolerance"].erase("fp8_e5m2");
  CHECK(refusal(d) == "operation typed: tensor q is fp8_e5m2 and checked: declare "
                      "tolerance.fp8_e5m2 (fp8 has no default of prereg's)");
  d = typed();
  d["tensors"][3]["dist"] = json::parse(R"({"lo": -500, "hi": 500})");
  CHECK(refusal(d) == "operation typed: dist of w: [-500, 500] is outside fp8_e4m3 (its largest "
                      "finite value is 448)");
  d = typed();
  d["tensors"][3]["dist"] = json::parse(R"({"lo": 0.31, "hi": 0.3115})");
  CHECK(refusal(d) == "operation typed: dist of w: [0.31, 0.3115] holds no nonzero fp8_e4m3 value");
  d = typed();
  d["tensors"][3]["dist"] = json::parse(R"({"lo": -1, "hi": 1, "row_offset": 1})");
  CHECK(refusal(d).find("row_offset is for fp32, fp16 and bf16 inputs, not fp8_e4m3") !=
        std::string::npos);
  d = typed();
  d["tensors"][6]["dims"] = "scalar";
  CHECK(refusal(d) == "operation typed: tensors[6].dims must be a list of 0 to 8 axis names ([] "
                      "for a 0-dim tensor: a loss, a norm, a count), got string");
  d = typed();
  d["tensors"][7]["dims"] = nullptr;
  CHECK(refusal(d).find("tensors[7].dims must be a list of 0 to 8 axis names") !=
        std::string::npos);
  d = typed();
  d["tensors"][1]["dist"] = json::parse(R"({"lo": 0, "hi": 10})");
  CHECK(refusal(d) == "operation typed: dist of targets: targets is int64: draw it with {int: [LO, "
                      "HI]} (integers in [LO, HI)) or {index_of: [TENSOR, AXIS]} (indices into "
                      "TENSOR's axis AXIS)");
  d = typed();
  d["tensors"][0]["dist"] = json::parse(R"({"int": [0, 10]})");
  CHECK(refusal(d) == "operation typed: dist of x: int is for an integer or bool input; x is the "
                      "protocol's dtype");
  d = typed();
  d["tensors"][1]["dist"] = json::parse(R"({"int": [0, 1.5]})");
  CHECK(refusal(d) == "operation typed: dist of targets.int[1] must be an integer or a formula "
                      "over the axes, got a fractional number");
  d = typed();
  d["tensors"][1]["dist"] = json::parse(R"({"int": [0, "width"]})");
  CHECK(refusal(d).find("names 'width', which is neither an axis (rows, vocab) nor s") !=
        std::string::npos);
  d = typed();
  d["tensors"][1].erase("dist");
  CHECK(refusal(d) == "operation typed: input targets lacks 'dist' (how it is drawn: {int: [LO, "
                      "HI]} or {index_of: [TENSOR, AXIS]})");
  d = typed();
  d["passes"]["fwd"]["bytes"] = "rows * s_nothing";
  CHECK(refusal(d).find("names 's_nothing', which is neither an axis (rows, vocab) nor s nor "
                        "s_NAME of a tensor (tensors: x, targets, ids, w, mask, small, scale, "
                        "loss, q, count)") != std::string::npos);
}

TEST_CASE("a range over the axes is checked at every shape of the protocol") {
  json d = typed();
  d["name"] = "typed_shapes";
  d["tensors"][5]["dist"] = json::parse(R"({"int": [0, "vocab"]})"); // int8: vocab <= 128
  (void)register_outside_operation(operation_from_json(d, "ops.py", "ops.py"));
  const std::string yaml = R"(prereg: 2
id: typed_shapes
title: t
hypothesis: h
device: cpu
operation: {python: ops.py, name: typed_shapes}
dtype: fp32
axes:
  rows: [4]
  vocab: [100, 1000]
passes: [fwd]
arms:
  - {id: np, python: arms.py, function: f}
measurement:
  repetitions: 3
predictions:
  - {id: P1, claim: c, expect: "gbps(np) > 0"}
)";
  CHECK_THROWS_WITH((void)parse_protocol(yaml, "p.yaml"),
                    "operation typed_shapes: the range of small [0, 1000) is outside int8 (its "
                    "values: -128 to 127) at rows=4 vocab=1000");
  std::string fits = yaml;
  fits.replace(fits.find("[100, 1000]"), 11, "[100, 128]");
  CHECK_NOTHROW((void)parse_protocol(fits, "p.yaml"));
}

TEST_CASE("inputs of every kind are drawn inside their ranges, reproducibly") {
  const operation_desc op = operation_from_json(typed(), "ops.py", "ops.py");
  const shape s{{64, 10}};
  const host_tensors t = reference::random_tensors(op, s, dtype::fp32, 7);
  CHECK(t == reference::random_tensors(op, s, dtype::fp32, 7));
  const auto all = [](const std::vector<double> &v, auto f) {
    return !v.empty() && std::all_of(v.begin(), v.end(), f);
  };
  CHECK(all(t[1], [](double v) { return v >= 0 && v < 10 && v == std::floor(v); }));
  CHECK(all(t[2], [](double v) { return v >= 0 && v < 10 && v == std::floor(v); }));
  CHECK(all(t[3], [](double v) {
    return v != 0 && std::fabs(v) <= 448 && reference::round_to(v, dtype::fp8_e4m3) == v;
  }));
  CHECK(all(t[4], [](double v) { return v == 0 || v == 1; }));
  CHECK(std::count(t[4].begin(), t[4].end(), 1.0) > 10); // both values drawn
  CHECK(all(t[5], [](double v) { return v >= -5 && v < 59; }));
  CHECK(t[6].size() == 1);
  CHECK((t[6][0] >= 0.5 && t[6][0] <= 2));
  CHECK(t[1] != reference::random_tensors(op, s, dtype::fp32, 8)[1]);
}

TEST_CASE("the CPU device fills and poisons every type") {
  auto dev = make_cpu_device();
  std::vector<std::uint8_t> buf(64 * 8);
  dev->fill_uniform(buf.data(), 64, dtype::int64, 3, 9, 11, 0, 0);
  const auto v = reference::unpack(buf, dtype::int64);
  CHECK(std::all_of(v.begin(), v.end(), [](double x) { return x >= 3 && x < 9; }));
  CHECK(*std::max_element(v.begin(), v.end()) == 8);
  std::vector<std::uint8_t> f8(64);
  dev->fill_uniform(f8.data(), 64, dtype::fp8_e5m2, -2, 2, 11, 0, 0);
  for (const double x : reference::unpack(f8, dtype::fp8_e5m2))
    CHECK((x != 0 && std::fabs(x) <= 2));
  std::vector<std::uint8_t> b(64);
  dev->fill_poison(b.data(), 64, dtype::boolean);
  CHECK(std::all_of(b.begin(), b.end(), [](std::uint8_t x) { return x == 0xa5; }));
  dev->fill_poison(buf.data(), 64, dtype::int64);
  for (const double x : reference::unpack_output(buf, dtype::int64))
    CHECK(reference::is_poison(x));
}

TEST_CASE("compare: an integer output exactly, an unwritten one as unwritten") {
  const std::vector<double> ref{0, 3, 7, 7};
  CHECK(reference::compare({0, 3, 7, 7}, ref, 0, 0).passed);
  const auto off = reference::compare({0, 3, 6, 7}, ref, 0, 0);
  CHECK_FALSE(off.passed);
  CHECK(off.first_bad == 2);
  auto unwritten = reference::unpack_output(reference::poison(4, dtype::int32), dtype::int32);
  const auto u = reference::compare(unwritten, ref, 0, 0);
  CHECK_FALSE(u.passed);
  CHECK(u.unwritten);
  // A 0-dim output: one element, no "constant" rule.
  CHECK(reference::compare({2.5}, {2.5}, 0, 0).passed);
  CHECK_FALSE(reference::compare({2.4}, {2.5}, 0.01, 0).passed);
}

TEST_CASE("formulas read s_NAME: the element bytes of tensor NAME") {
  const std::vector<std::string> axes{"rows"};
  const std::vector<std::int64_t> extents{3};
  const std::vector<std::pair<std::string, std::int64_t>> sizes{{"targets", 8}, {"q", 1}};
  const formula_env env{&axes, &extents, 2, &sizes};
  CHECK(eval_formula("rows * s_targets + s_q + s", env, "f") == 27);
  const std::vector<std::string> shadow{"s_q"};
  const formula_env by_axis{&shadow, &extents, 2, &sizes};
  CHECK(eval_formula("s_q", by_axis, "f") == 3); // an axis of that name wins
}
