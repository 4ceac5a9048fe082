// Tests of the roofs (issue 47; docs/analysis.md "The roofs", docs/operations.md "Reads and
// writes"): the bytes model split into reads and writes, the built-in operations' FLOPs, the mix
// roof, a cell's roofline numbers, `bound` and `above-ceiling` against the roofs, the
// expressions tflops/pct_compute/pct_roof, report.json schema_version 8 both ways, the pages, and
// a fake run with planted ceilings that audits clean and fails on a tampered rate or bound.
#include "fake_device.hpp"

#include "analysis/cell_stats.hpp"
#include "analysis/defects.hpp"
#include "analysis/roofline.hpp"
#include "audit/audit.hpp"
#include "report/report.hpp"
#include "report/report_text.hpp"
#include "spec/bytes_model.hpp"
#include "spec/operation_file.hpp"
#include "spec/roofs.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace prereg;
using namespace prereg::testing;
namespace fs = std::filesystem;

namespace {

op_traffic split(const std::string &op, dtype type, pass_kind pass, std::int64_t rows,
                 std::int64_t cols) {
  const operation_desc &d = *find_operation(op);
  return d.traffic_per_invocation(type, pass, d.shape_of(rows, cols));
}

/// An operation file's descriptor over rows x vocab: logits in, a per-row fp32 loss out, with
/// the bytes formula (and split) given.
json loss_op(const std::string &name, const json &fwd_formulas) {
  json d = json::parse(R"({"axes": ["rows", "vocab"],
    "tensors": [{"name": "logits", "role": "input", "dims": ["rows", "vocab"], "passes": ["fwd"],
                 "dist": {"lo": -1, "hi": 1}},
                {"name": "loss", "role": "output", "dims": ["rows"], "element": "fp32",
                 "passes": ["fwd"]}],
    "reference": "ref"})");
  d["name"] = name;
  d["passes"] = {{"fwd", fwd_formulas}};
  return d;
}

std::string refusal(const json &d) {
  try {
    (void)operation_from_json(d, "ops.py", "ops.py");
  } catch (const error &e) {
    return e.what();
  }
  return "accepted";
}

/// A prereg: 2 LayerNorm protocol on the CPU: two arms, 64 and 128 rows x 256, 20 repetitions,
/// with predictions over the roofs' metrics.
const char *const roofs_yaml = R"yaml(prereg: 2
id: fake_roofs
title: "Fake LayerNorm against the roofs"
hypothesis: "The fused forward reaches more of its roofs than the unfused one"
device: cpu
operation: layernorm
dtype: fp32
axes:
  rows: [64, 128]
  cols: [256]
passes: [fwd]
arms:
  - id: unfused
    kernel: layernorm.unfused
  - id: fused
    kernel: layernorm.fused
measurement:
  repetitions: 20
  warmup: 2
analysis:
  bootstrap_resamples: 200
predictions:
  - id: P1
    claim: "The fused forward computes faster than the unfused one"
    at: {rows: 128, pass: fwd}
    expect: "tflops(fused) > tflops(unfused) and pct_compute(fused) > pct_compute(unfused)"
  - id: P2
    claim: "Neither reaches its bandwidth roof"
    at: {pass: fwd}
    expect: "pct_roof(fused) < 100 and pct_roof(unfused) < 100"
)yaml";

/// A record of arm `arm` at rows x 256 with steady samples around `ms`.
cell_record record(const std::string &arm, std::int64_t rows, double ms) {
  cell_record c;
  c.key = {arm, pass_kind::fwd, rows, 256};
  c.samples_ms = steady_samples(ms, 20);
  c.peak_bytes = 4096;
  return c;
}

/// The fake's instrument with roofs, its rates derived from its samples.
instrument_record roofed(roofs_record r = fake_plants::default_roofs()) {
  instrument_record in = fake_plants::default_instrument();
  derive_roofs(r);
  in.roofs = std::move(r);
  return in;
}

/// A compute ceiling of `tflops` TFLOP/s (one sample).
compute_roof ceiling_of(double tflops) {
  compute_roof c;
  c.method = "planted";
  c.shape = "1";
  c.flops = 1000000;
  c.samples_ms = {1e-3 * 1e6 / (tflops * 1e12) * 1e3};
  return c;
}

} // namespace

TEST_CASE("the bytes model splits into reads and writes that add up to it") {
  SUBCASE("the built-in operations: the tensor rule, read and written by role and pass") {
    // LayerNorm fp32 3x5: fwd reads x, gamma, beta, writes y, mean, rstd.
    CHECK(split("layernorm", dtype::fp32, pass_kind::fwd, 3, 5) == op_traffic{100, 84});
    // fwd+bwd: the backward reads x, gamma, dy, mean, rstd and writes dx, dgamma, dbeta.
    CHECK(split("layernorm", dtype::fp32, pass_kind::fwd_bwd, 3, 5) == op_traffic{264, 184});
    CHECK(split("rmsnorm", dtype::fp32, pass_kind::fwd, 3, 5) == op_traffic{80, 72});
    // softmax's backward reads the y its forward wrote.
    CHECK(split("softmax", dtype::bf16, pass_kind::fwd, 3, 5) == op_traffic{30, 30});
    CHECK(split("softmax", dtype::bf16, pass_kind::fwd_bwd, 3, 5) == op_traffic{90, 60});
    for (const auto &op : all_operations())
      for (const auto pass : op.passes)
        for (const auto type : {dtype::fp32, dtype::fp16, dtype::bf16}) {
          const op_traffic t = op.traffic_per_invocation(type, pass, op.shape_of(7, 9));
          CHECK(t.read + t.write == op.bytes_per_invocation(type, pass, op.shape_of(7, 9)));
        }
  }
  SUBCASE("an operation file's bytes: the rule whose total it is, else in proportion") {
    // The tensor rule's total: 2 * rows * vocab * s is x read and y written.
    json d = loss_op("split_rule", {{"bytes", "rows * vocab * s + 4 * rows"}});
    const operation_desc rule = operation_from_json(d, "ops.py", "ops.py");
    CHECK(rule.traffic_per_invocation(dtype::bf16, pass_kind::fwd, shape{{2, 10}}) ==
          op_traffic{40, 8});
    // Neither rule's total (8 bytes a row of targets that are no tensor): in the proportion of
    // the tensors once each, reads rounded down: 64 x 40 / 48 = 53.3.
    d = loss_op("split_prop", {{"bytes", "rows * vocab * s + 12 * rows"}});
    const operation_desc prop = operation_from_json(d, "ops.py", "ops.py");
    CHECK(prop.traffic_per_invocation(dtype::bf16, pass_kind::fwd, shape{{2, 10}}) ==
          op_traffic{53, 11});
    // Declared: read_bytes alone, write_bytes the rest; both.
    d = loss_op("split_read", {{"bytes", "rows * vocab * s + 12 * rows"},
                               {"read_bytes", "rows * vocab * s + 8 * rows"}});
    const operation_desc read = operation_from_json(d, "ops.py", "ops.py");
    CHECK(read.traffic_per_invocation(dtype::bf16, pass_kind::fwd, shape{{2, 10}}) ==
          op_traffic{56, 8});
    CHECK(operation_to_json(read)["passes"]["fwd"]["read_bytes"] == "rows * vocab * s + 8 * rows");
    CHECK_FALSE(operation_to_json(prop)["passes"]["fwd"].contains("read_bytes"));
    d["passes"]["fwd"]["write_bytes"] = "4 * rows";
    const operation_desc both = operation_from_json(d, "ops.py", "ops.py");
    CHECK(both.traffic_per_invocation(dtype::bf16, pass_kind::fwd, shape{{2, 10}}) ==
          op_traffic{56, 8});
    // Both, fitting with every name 1 (9 + 4 = 13) but not at the cell: the cell's error.
    d["passes"]["fwd"]["write_bytes"] = "4 * vocab";
    const operation_desc misfit = operation_from_json(d, "ops.py", "ops.py");
    CHECK_THROWS_WITH(
        (void)misfit.traffic_per_invocation(dtype::bf16, pass_kind::fwd, shape{{2, 10}}),
        "operation split_read: pass fwd: read_bytes 56 + write_bytes 40 is not its bytes 64");
  }
  SUBCASE("a fused fwd+bwd file's bytes are the tensors once each") {
    const json d = json::parse(R"({"name": "glu", "axes": ["rows", "cols"],
      "tensors": [
        {"name": "a", "role": "input", "dims": ["rows", "cols"], "passes": ["fwd", "bwd"], "dist": {"lo": -1, "hi": 1}},
        {"name": "b", "role": "input", "dims": ["rows", "cols"], "passes": ["fwd", "bwd"], "dist": {"lo": -1, "hi": 1}},
        {"name": "dy", "role": "input", "dims": ["rows", "cols"], "passes": ["bwd"], "dist": {"lo": -1, "hi": 1}},
        {"name": "y", "role": "output", "dims": ["rows", "cols"], "passes": ["fwd"]},
        {"name": "da", "role": "output", "dims": ["rows", "cols"], "passes": ["bwd"]},
        {"name": "db", "role": "output", "dims": ["rows", "cols"], "passes": ["bwd"]}],
      "passes": {"fwd": {"bytes": "3 * rows * cols * s"},
                 "fwd+bwd": {"bytes": "6 * rows * cols * s", "flops": "16 * rows * cols"}},
      "reference": "ref"})");
    const operation_desc op = operation_from_json(d, "ops.py", "ops.py");
    CHECK(op.traffic_per_invocation(dtype::fp32, pass_kind::fwd_bwd, shape{{2, 3}}) ==
          op_traffic{72, 72});
    CHECK(op.traffic_per_invocation(dtype::fp32, pass_kind::fwd, shape{{2, 3}}) ==
          op_traffic{48, 24});
  }
  SUBCASE("bad splits are refused at check, each with its line") {
    json d = loss_op("bad", {{"read_bytes", "rows"}});
    CHECK(refusal(d) == "operation bad: passes.fwd declares read_bytes without bytes (they split "
                        "the pass's bytes)");
    d = loss_op("bad",
                {{"bytes", "rows * vocab"}, {"read_bytes", "rows"}, {"write_bytes", "rows"}});
    CHECK(refusal(d) == "operation bad: passes.fwd: read_bytes and write_bytes do not split bytes "
                        "(with every name 1: bytes 1, read_bytes 1, write_bytes 1)");
    d = loss_op("bad", {{"bytes", "rows"}, {"write_bytes", "2 * rows"}});
    CHECK(refusal(d).find("do not split bytes") != std::string::npos);
    d = loss_op("bad", {{"bytes", "rows"}, {"write_bytes", "rows * depth"}});
    CHECK(refusal(d).find("names 'depth'") != std::string::npos);
  }
}

TEST_CASE("FLOPs and the element type a pass computes in") {
  const operation_desc &ln = operation_named("layernorm");
  CHECK(ln.flops_per_invocation(dtype::fp32, pass_kind::fwd, ln.shape_of(3, 5)) == 105);
  CHECK(ln.flops_per_invocation(dtype::fp32, pass_kind::fwd_bwd, ln.shape_of(3, 5)) == 300);
  const operation_desc &rms = operation_named("rmsnorm");
  CHECK(rms.flops_per_invocation(dtype::bf16, pass_kind::fwd, rms.shape_of(3, 5)) == 60);
  CHECK(rms.flops_per_invocation(dtype::bf16, pass_kind::fwd_bwd, rms.shape_of(3, 5)) == 195);
  const operation_desc &sm = operation_named("softmax");
  CHECK(sm.flops_per_invocation(dtype::fp16, pass_kind::fwd, sm.shape_of(3, 5)) == 75);
  CHECK(sm.flops_per_invocation(dtype::fp16, pass_kind::fwd_bwd, sm.shape_of(3, 5)) == 135);
  // The built-ins' bytes stay the tensor rule (their descriptors declare FLOPs only).
  CHECK(bytes_per_invocation("layernorm", dtype::bf16, pass_kind::fwd, 128, 1024) == 529408);
  CHECK(ln.compute_type(dtype::bf16, pass_kind::fwd) == "bf16");
  CHECK(sm.compute_type(dtype::fp32, pass_kind::fwd_bwd) == "fp32");
  // The narrowest input: an fp32 input beside a bf16 one computes in bf16; fp32 alone in fp32.
  json d = loss_op("narrow", {{"flops", "rows * vocab"}});
  d["tensors"][0]["element"] = "fp32";
  const operation_desc only_fp32 = operation_from_json(d, "ops.py", "ops.py");
  CHECK(only_fp32.compute_type(dtype::bf16, pass_kind::fwd) == "fp32");
  d["tensors"].push_back(json::parse(R"({"name": "bias", "role": "input", "dims": ["vocab"],
                                         "passes": ["fwd"], "dist": {"lo": -1, "hi": 1}})"));
  const operation_desc mixed = operation_from_json(d, "ops.py", "ops.py");
  CHECK(mixed.compute_type(dtype::bf16, pass_kind::fwd) == "bf16");
}

TEST_CASE("the mix roof: reads paired with writes cost as the copy, the rest as one stream") {
  CHECK(mix_roof_gbps(5, 5, 4.0, 6.0, 2.0) == doctest::Approx(4.0));     // a copy
  CHECK(mix_roof_gbps(5, 0, 4.0, 6.0, 2.0) == doctest::Approx(6.0));     // reads only
  CHECK(mix_roof_gbps(0, 5, 4.0, 6.0, 2.0) == doctest::Approx(2.0));     // writes only
  CHECK(mix_roof_gbps(3, 1, 4.0, 6.0, 2.0) == doctest::Approx(4.8));     // 4 / (2/4 + 2/6)
  CHECK(mix_roof_gbps(1, 3, 4.0, 6.0, 2.0) == doctest::Approx(8.0 / 3)); // 4 / (2/4 + 2/2)
  // A ceiling the mix needs is missing: NaN; one it does not need may be.
  CHECK(std::isnan(mix_roof_gbps(0, 0, 4.0, 6.0, 2.0)));
  CHECK(std::isnan(mix_roof_gbps(1, 1, NAN, 6.0, 2.0)));
  CHECK(std::isnan(mix_roof_gbps(2, 1, 4.0, 0.0, 2.0)));
  CHECK(mix_roof_gbps(5, 0, NAN, 6.0, NAN) == doctest::Approx(6.0));
  // The H200's read-only GEMM operand: 107% of the copy ceiling is under its read roof.
  const double roof = mix_roof_gbps(1000, 1, 4281.0, 4700.0, 4400.0);
  CHECK(roof > 4690.0);
  CHECK(100.0 * (1.07 * 4281.0) / roof < 100.0);
}

TEST_CASE("a cell against the roofs: its numbers, bound, flag and defect") {
  const protocol p = parse_protocol(roofs_yaml, "roofs.yaml");
  const cell_record fused = record("fused", 64, 0.1);
  const std::uint64_t bytes = bytes_per_step("layernorm", dtype::fp32, fused.key, 1);
  const double flops = 7.0 * 64 * 256;
  SUBCASE("the numbers") {
    const instrument_record in = roofed();
    const cell_statistics st = compute_cell_statistics(fused, p, in, {});
    REQUIRE(st.roofline);
    const report_roofline &r = *st.roofline;
    CHECK(r.read_bytes_per_step + r.write_bytes_per_step == bytes);
    CHECK(r.read_bytes_per_step == 64 * 256 * 4 + 2 * 256 * 4);
    CHECK(r.roof_gbps == mix_roof_gbps(r.read_bytes_per_step, r.write_bytes_per_step, 1000.0,
                                       in.roofs->read.gbps, in.roofs->write.gbps));
    CHECK(r.pct_roof == doctest::Approx(100.0 * st.gbps / r.roof_gbps));
    REQUIRE(r.flops_per_step);
    CHECK(*r.flops_per_step == 114688);
    CHECK(r.compute == "fp32");
    CHECK(r.tflops == doctest::Approx(flops / (st.statistic_ms * 1e-3) / 1e12));
    CHECK(r.pct_compute == doctest::Approx(100.0 * r.tflops / 100.0));
    CHECK(r.intensity == doctest::Approx(flops / static_cast<double>(bytes)));
    CHECK(st.bound == bound_kind::neither);
    // Without roofs: no roofline, and the old rules (compat: versions 1 to 7).
    const cell_statistics old =
        compute_cell_statistics(fused, p, fake_plants::default_instrument(), {});
    CHECK_FALSE(old.roofline);
    CHECK(old.pct_ceiling == st.pct_ceiling);
  }
  SUBCASE("bound: the roof the cell comes nearer, at 60% of it") {
    roofs_record r = fake_plants::default_roofs();
    // fused at 64 rows computes 1.147 TFLOP/s x 1e-6; a ceiling of 1.4e-6 TFLOP/s: 82%.
    r.compute["fp32"] = ceiling_of(1.4e-6);
    CHECK(compute_cell_statistics(fused, p, roofed(r), {}).bound == bound_kind::compute);
    r.compute["fp32"] = ceiling_of(2.5e-6); // 46%: nearer the compute roof, but not at 60%
    CHECK(compute_cell_statistics(fused, p, roofed(r), {}).bound == bound_kind::neither);
    r.compute["fp32"].unknown = "not here"; // no compute ceiling: the bandwidth rule alone
    instrument_record slow = roofed(r);
    slow.ceiling_gbps = 1.5;
    slow.roofs->read.gbps = slow.roofs->write.gbps = 1.5; // 1.34 GB/s is 89% of this roof
    CHECK(compute_cell_statistics(fused, p, slow, {}).bound == bound_kind::bandwidth);
    slow.launch_floor_ms = 0.1; // within twice the launch floor: launch comes first
    CHECK(compute_cell_statistics(fused, p, slow, {}).bound == bound_kind::launch);
  }
  SUBCASE("above-ceiling compares against the mix's roof, the copy ceiling is kept") {
    // A read-mostly operation (a row sum: 65536 bytes read, 256 written at 64 x 256) at 107%
    // of a 1 GB/s copy ceiling but under its roof, nearly the 1.2 GB/s read ceiling.
    (void)register_outside_operation(operation_from_json(json::parse(R"({"name": "rowsum",
      "axes": ["rows", "cols"], "reference": "ref", "passes": {"fwd": {"flops": "rows * cols"}},
      "tensors": [{"name": "x", "role": "input", "dims": ["rows", "cols"], "passes": ["fwd"],
                   "dist": {"lo": -1, "hi": 1}},
                  {"name": "y", "role": "output", "dims": ["rows"], "element": "fp32",
                   "passes": ["fwd"]}]})"),
                                                         "ops.py", "ops.py"));
    std::string yaml = roofs_yaml;
    yaml.replace(yaml.find("operation: layernorm"), 20,
                 "operation: {python: ops.py, name: rowsum}");
    yaml.replace(yaml.find("kernel: layernorm.unfused"), 25, "python: a.py\n    function: f");
    yaml.replace(yaml.find("kernel: layernorm.fused"), 23, "python: a.py\n    function: g");
    const protocol rp = parse_protocol(yaml, "rowsum.yaml");
    cell_record c = record("fused", 64, 1.0);
    c.samples_ms.assign(20, 65792.0 / 1.07e9 * 1e3);
    instrument_record in = roofed();
    in.ceiling_gbps = 1.0;
    in.roofs->read.gbps = 1.2;
    in.roofs->write.gbps = 0.9;
    const cell_statistics st = compute_cell_statistics(c, rp, in, {});
    CHECK(st.pct_ceiling == doctest::Approx(107.0));
    CHECK(st.roofline->read_bytes_per_step == 65536);
    CHECK(st.roofline->write_bytes_per_step == 256);
    CHECK(st.roofline->pct_roof == doctest::Approx(107.0 / st.roofline->roof_gbps));
    CHECK(st.roofline->pct_roof < 90.0);
    CHECK(std::find(st.flags.begin(), st.flags.end(), "above-ceiling") == st.flags.end());
    CHECK(st.bound == bound_kind::bandwidth);
    // Against the copy ceiling alone (no roofs: versions 1 to 7) the same cell is flagged.
    instrument_record copy_only = in;
    copy_only.roofs.reset();
    const cell_statistics old = compute_cell_statistics(c, rp, copy_only, {});
    CHECK(std::find(old.flags.begin(), old.flags.end(), "above-ceiling") != old.flags.end());
    in.roofs->read.gbps = 1.0; // now above its roof too
    raw_run run;
    run.instrument = in;
    run.cells = {c};
    const auto stats = compute_cell_statistics(rp, run);
    CHECK(std::find(stats[0].flags.begin(), stats[0].flags.end(), "above-ceiling") !=
          stats[0].flags.end());
    const auto defects = detect_defects(rp, run, stats);
    REQUIRE(!defects.empty());
    CHECK(defects[0].code == "above-ceiling");
    CHECK(defects[0].message == "fused fwd 64x256 reads 107.0% of its 1 GB/s roof for 65536 bytes "
                                "read and 256 written (107.0% of the measured 1 GB/s copy "
                                "ceiling)");
    CHECK(defects[0].evidence.at("read_bytes_per_step") == 65536);
    CHECK(defects[0].evidence.contains("roof_gbps"));
    CHECK(defects[0].evidence.contains("pct_roof"));
  }
}

TEST_CASE("the roofs' expressions: prereg: 2, declared FLOPs, resampled like time") {
  const protocol p = parse_protocol(roofs_yaml, "roofs.yaml");
  std::string v1 = roofs_yaml;
  v1.replace(v1.find("prereg: 2"), 9, "prereg: 1");
  v1.replace(v1.find("axes:"), 5, "shapes:");
  CHECK_THROWS_WITH((void)parse_protocol(v1, "v1.yaml"),
                    doctest::Contains("tflops() reads the roofs and needs prereg: 2"));
  std::string arm = roofs_yaml;
  arm.replace(arm.find("id: unfused"), 11, "id: tflops");
  CHECK_THROWS_WITH((void)parse_protocol(arm, "a.yaml"),
                    doctest::Contains("arm id 'tflops' is a word of the expect language"));
  // An operation file that declares no FLOPs: tflops and pct_compute are refused, pct_roof not.
  (void)register_outside_operation(
      operation_from_json(loss_op("noflops", {{"bytes", "rows * vocab * s"}}), "ops.py", "ops.py"));
  const std::string file_yaml = R"(prereg: 2
id: noflops
title: t
hypothesis: h
device: cpu
operation: {python: ops.py, name: noflops}
dtype: fp32
axes: {rows: [4], vocab: [8]}
passes: [fwd]
arms:
  - {id: np, python: arms.py, function: f}
measurement: {repetitions: 3}
predictions:
  - {id: P1, claim: c, expect: "EXPR"}
)";
  const auto with = [&](const std::string &expr) {
    std::string y = file_yaml;
    y.replace(y.find("EXPR"), 4, expr);
    return y;
  };
  CHECK_THROWS_WITH((void)parse_protocol(with("tflops(np) > 1"), "f.yaml"),
                    doctest::Contains("tflops() reads the operation's FLOPs, and operation "
                                      "noflops declares none for pass fwd"));
  CHECK_THROWS_WITH((void)parse_protocol(with("pct_compute(np) > 1"), "f.yaml"),
                    doctest::Contains("pct_compute()"));
  CHECK_NOTHROW((void)parse_protocol(with("pct_roof(np) < 100"), "f.yaml"));

  // Judged: the fused arm is twice as fast, so its rate and share are twice the unfused one's.
  raw_run run;
  run.instrument = roofed();
  for (const std::int64_t rows : {64, 128})
    for (const auto &[a, ms] : {std::pair{"unfused", 0.2}, std::pair{"fused", 0.1}}) {
      run.cells.push_back(record(a, rows, ms * static_cast<double>(rows) / 64.0));
      run.correctness.push_back({run.cells.back().key, 0, 0, false, true, ""});
    }
  const auto verdicts = judge_predictions(p, std::string(64, 'a'), run, report_analysis_version);
  REQUIRE(verdicts.size() == 2);
  CHECK(verdicts[0].verdict == verdict_kind::confirmed);
  CHECK(verdicts[1].verdict == verdict_kind::confirmed);
  // Without a compute ceiling of the cells' type the cells cannot decide.
  run.instrument.roofs->compute.clear();
  const auto blocked = judge_predictions(p, std::string(64, 'a'), run, report_analysis_version);
  CHECK(blocked[0].verdict == verdict_kind::inconclusive);
  CHECK(blocked[0].reason ==
        "arm fused has no measured fp32 compute ceiling at fwd 128x256; arm unfused has no "
        "measured fp32 compute ceiling at fwd 128x256");
  CHECK(blocked[1].verdict == verdict_kind::confirmed); // pct_roof needs no compute ceiling
  run.instrument.roofs.reset();
  const auto none = judge_predictions(p, std::string(64, 'a'), run, report_analysis_version);
  CHECK(none[1].reason.find("arm fused has no measured bandwidth roof at fwd 64x256") == 0);
}

TEST_CASE("report.json schema_version 8: the roofs and each cell's roofline, both ways") {
  temp_lab lab;
  lab.freeze(roofs_yaml);
  fake_plants plants;
  const fs::path dir = lab.run(plants.with_roofs());
  json report = read_report(dir);
  CHECK(report.at("schema_version") == report_schema_version_roofs);
  const json &roofs = report.at("instrument").at("roofs");
  CHECK(roofs.at("read").at("method") == "fake read sweep");
  CHECK(roofs.at("read").at("samples_ms").size() == 3);
  CHECK(roofs.at("read").at("gbps").get<double>() == doctest::Approx(1200.0));
  CHECK(roofs.at("write").at("gbps").get<double>() == doctest::Approx(900.0));
  CHECK(roofs.at("compute").at("fp32").at("tflops").get<double>() == doctest::Approx(100.0));
  CHECK(roofs.at("compute").at("fp32").at("shape") == "m=1000 n=1000 k=500");
  for (const auto &c : report.at("cells")) {
    const json &r = c.at("roofline");
    CHECK(r.at("read_bytes_per_step").get<std::uint64_t>() +
              r.at("write_bytes_per_step").get<std::uint64_t>() ==
          c.at("bytes_per_step").get<std::uint64_t>());
    CHECK(r.at("compute") == "fp32");
    CHECK(r.at("tflops").get<double>() > 0);
    CHECK(r.at("pct_compute").is_number());
  }
  const report_document doc = report_from_json(report, "report.json");
  CHECK(canonical_json(to_json(doc)) == canonical_json(report));
  const audit_result a = audit_report(dir, lab.st(), std::vector<public_key>{});
  for (const auto &c : a.checks)
    CHECK_MESSAGE(c.passed, c.name << ": " << c.detail);
  CHECK(a.checks[4].detail.find("; the roofs re-derive from their samples (read 1200 GB/s, write "
                                "900 GB/s, fp32 100 TFLOP/s)") != std::string::npos);

  SUBCASE("an unknown compute ceiling is written as \"unknown: WHY\"") {
    roofs_record r = fake_plants::default_roofs();
    r.compute["fp32"].unknown = "no library here";
    const fs::path d2 = lab.run(plants.with_roofs(r));
    const json r2 = read_report(d2);
    CHECK(r2.at("instrument").at("roofs").at("compute").at("fp32") == "unknown: no library here");
    CHECK(r2.at("cells")[0].at("roofline").at("pct_compute").is_null());
    CHECK(r2.at("cells")[0].at("roofline").at("tflops").is_number());
    CHECK(audit_report(d2, lab.st(), std::vector<public_key>{}).passed());
  }
  SUBCASE("the reader refuses roofs in an older version and malformed roofs") {
    json old = report;
    old["schema_version"] = report_schema_version_state;
    CHECK_THROWS_WITH((void)report_from_json(old, "r.json"),
                      doctest::Contains("instrument.roofs is not a member of the report format"));
    json bad = report;
    bad["instrument"]["roofs"]["compute"]["fp32"] = "fast";
    CHECK_THROWS_WITH((void)report_from_json(bad, "r.json"),
                      doctest::Contains("compute.fp32 is a string that is not \"unknown: WHY\""));
    bad = report;
    bad["cells"][0]["bound"] = "memory";
    CHECK_THROWS_WITH((void)report_from_json(bad, "r.json"),
                      doctest::Contains("not launch, bandwidth or neither or compute"));
    bad = report;
    bad["cells"][0]["roofline"]["colour"] = 1;
    CHECK_THROWS((void)report_from_json(bad, "r.json"));
    json future = report;
    future["schema_version"] = report_schema_version_max + 1;
    CHECK_THROWS((void)report_from_json(future, "r.json"));
  }
}

TEST_CASE("the audit re-derives the roofs: a tampered rate, bound or ceiling fails statistics") {
  temp_lab lab;
  lab.freeze(roofs_yaml);
  fake_plants plants;
  const fs::path dir = lab.run(plants.with_roofs());
  REQUIRE(audit_report(dir, lab.st(), std::vector<public_key>{}).passed());
  json report = read_report(dir);
  const auto fails = [&](const std::string &what) {
    const std::string bytes = canonical_json(report);
    write_file_atomic(dir / "report.json", bytes);
    write_file_atomic(dir / "report.dsse.json", make_envelope(bytes, lab.key()));
    const report_document doc = report_from_json(report, "report.json");
    write_file_atomic(dir / "report.md", render_markdown(doc));
    write_file_atomic(dir / "report.html", render_html(doc));
    const audit_result r = audit_report(dir, lab.st(), std::vector<public_key>{});
    std::vector<std::string> failed = r.failed();
    CHECK(failed == std::vector<std::string>{"statistics", "ledger"});
    for (const auto &c : r.checks)
      if (c.name == "statistics")
        CHECK_MESSAGE(c.detail.find(what) != std::string::npos, c.detail);
  };
  SUBCASE("a cell's TFLOP/s") {
    json &t = report.at("cells")[1].at("roofline").at("tflops");
    t = t.get<double>() * 2;
    fails("cells[1] (unfused fwd 128x256): roofline.tflops differs");
  }
  SUBCASE("a cell's bound") {
    report.at("cells")[0].at("bound") = "compute";
    fails("cells[0] (unfused fwd 64x256): bound is \"compute\" in the report, recomputed "
          "\"neither\"");
  }
  SUBCASE("the read ceiling's rate") {
    report.at("instrument").at("roofs").at("read").at("gbps") = 5000.0;
    fails("instrument.roofs.read.gbps is 5000 in the report, its samples give 1200");
  }
  SUBCASE("a compute ceiling's rate, consistent with every cell's share") {
    json &c = report.at("instrument").at("roofs").at("compute").at("fp32");
    c.at("samples_ms") = json::array({0.02, 0.02, 0.02}); // its rate is now 50, not 100
    c.at("tflops") = tflops(1000000000, 0.02);
    fails("roofline.pct_compute differs");
  }
  SUBCASE("a compute ceiling whose recorded rate is not its samples'") {
    // Every cell re-derived from the recorded rate passes; the rate itself does not.
    report.at("instrument").at("roofs").at("compute").at("fp32").at("samples_ms") =
        json::array({0.0101, 0.0102, 0.0103});
    fails("instrument.roofs.compute.fp32.tflops is 99.99999999999999 in the report, its samples "
          "give 98.0392156862745");
  }
}

TEST_CASE("the pages show the roofs: ceilings, a table per block, a roofline chart per pass") {
  temp_lab lab;
  lab.freeze(roofs_yaml);
  fake_plants plants;
  const json with = read_report(lab.run(plants.with_roofs()));
  const json without = read_report(lab.run(plants));
  const std::string md = render_markdown(report_from_json(with, "r.json"));
  CHECK(md.find("| read ceiling | 1200 GB/s (median of 3 windows of 1.0 MiB, range 1190 to 1210; "
                "fake read sweep) |") != std::string::npos);
  CHECK(md.find("| write ceiling | ") != std::string::npos);
  // 1e9 FLOPs in 0.01 ms is 99.99999999999999 TFLOP/s in doubles: three digits show 100.0.
  CHECK(md.find("| compute ceiling fp32 | 100.0 TFLOP/s (median of 3 calls of m=1000 n=1000 "
                "k=500; fake GEMM) |") != std::string::npos);
  CHECK(md.find("% of the cell's own bandwidth roof") != std::string::npos);
  CHECK(md.find("bound where launch, bandwidth or compute") != std::string::npos);
  const std::string page = render_html(report_from_json(with, "r.json"));
  const auto at = page.find("<section id=\"roofline\">");
  REQUIRE(at != std::string::npos);
  const std::string section = page.substr(at, page.find("</section>", at) - at);
  CHECK(section.find("data-kind=\"roofline\" data-pass=\"fwd\" data-cols=\"0\" data-arms=\"2\"") !=
        std::string::npos);
  CHECK(section.find("<g class=\"series\" data-arm=\"unfused\"") != std::string::npos);
  CHECK(section.find("<g class=\"series\" data-arm=\"fused\"") != std::string::npos);
  CHECK(section.find("fp32 100.0 TFLOP/s") != std::string::npos); // the compute roof's label
  CHECK(section.find("read 1200 GB/s") != std::string::npos);
  CHECK(section.find("fused · fwd 64×256 · ") != std::string::npos);
  CHECK(section.find("<script") == std::string::npos);
  // A report without roofs: none of it (its pages are what they were).
  const std::string md0 = render_markdown(report_from_json(without, "r.json"));
  const std::string page0 = render_html(report_from_json(without, "r.json"));
  CHECK(without.at("schema_version") == report_schema_version);
  CHECK(md0.find("read ceiling") == std::string::npos);
  CHECK(md0.find("bound where launch or bandwidth") != std::string::npos);
  CHECK(page0.find("roofline") == std::string::npos);
}
