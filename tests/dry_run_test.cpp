// Tests of the dry run of `check` and `freeze` (docs/engine.md, "The dry run") on the CPU
// device: the smallest shape per arm and pass, built-in arms planted wrong refused with their
// line, the reference's failure named as the reference's, a missing device a notice.
#include "device/device.hpp"
#include "prereg/error.hpp"
#include "run/dry_run.hpp"
#include "spec/arm_code.hpp"
#include "spec/registry.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>
#include <string>

using namespace prereg;

namespace {

protocol layernorm_protocol() {
  protocol p;
  p.id = "dry_run_test";
  p.title = "dry run test";
  p.hypothesis = "none";
  p.device = "cpu";
  p.op = "layernorm";
  p.type = dtype::fp32;
  p.rows = {32, 4, 8}; // the smallest (4) is not the first
  p.cols = {96};
  p.passes = {pass_kind::fwd, pass_kind::fwd_bwd};
  p.arms = {{"unfused", "layernorm.unfused", launch_mode::stream, 1},
            {"fused", "layernorm.fused", launch_mode::stream, 1}};
  p.measurement.repetitions = 5;
  p.measurement.warmup = 2;
  p.correctness = {1e-5, 1e-5};
  return p;
}

void copy_forward(const norm_tensors &t, step_allocator &, void *) { // y = x: not normalised
  std::memcpy(t.y, t.x, static_cast<std::size_t>(t.rows * t.cols) * 4);
  for (std::int64_t r = 0; r < t.rows; ++r)
    t.mean[r] = t.rstd[r] = 0;
}
void throwing_forward(const norm_tensors &, step_allocator &, void *) {
  throw std::runtime_error("planted failure on the first call");
}
void no_backward(const norm_tensors &, step_allocator &, void *) {} // writes no gradient
const arm_ops copy_ops{&copy_forward, &no_backward};
const arm_ops throwing_ops{&throwing_forward, &no_backward};
const arm_ops &fused() { return *builtin_arm_code(*find_arm("cpu", "layernorm.fused")).norm; }
const arm_ops lazy_backward_ops{fused().forward, &no_backward};

/// The built-in arms, but the one with id `planted` runs `ops`.
arm_resolver planting(const std::string &planted, const arm_ops *ops) {
  return [planted, ops](const arm_spec &a, const arm_info &info) -> arm_code {
    if (a.id == planted)
      return {ops, nullptr};
    return builtin_arm_code(info);
  };
}

const auto cpu = [](const std::string &, int) { return make_cpu_device(); };

std::string refusal(const protocol &p, const arm_resolver &resolve) {
  try {
    (void)dry_run_here(p, ".", cpu, resolve, "");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::invalid);
    return e.what();
  }
  FAIL("the dry run passed");
  return {};
}

} // namespace

TEST_CASE("dry run: each built-in arm called once per pass at the smallest shape") {
  const protocol p = layernorm_protocol();
  const dry_run_report r = dry_run_here(p, ".", cpu, builtin_resolver(), "");
  CHECK(r.device == "cpu");
  CHECK(r.not_run.empty());
  CHECK(r.not_called.empty());
  REQUIRE(r.calls.size() == 4);
  for (const auto &k : r.calls) {
    CHECK(k.rows == 4);
    CHECK(k.cols == 96);
  }
  CHECK(r.calls[0].arm == "unfused");
  CHECK(r.calls[0].pass == pass_kind::fwd);
  CHECK(r.calls[1].pass == pass_kind::fwd_bwd);
  CHECK(dry_run_line(r, p) ==
        "dry run on cpu: each arm called once, every output matches operation layernorm's "
        "reference (rtol 1e-05, atol 1e-05) at fwd 4x96 (unfused, fused); fwd+bwd 4x96 "
        "(unfused, fused)");
  // The report crosses the loading child's pipe as JSON.
  const dry_run_report back = dry_run_report::from_json(r.to_json());
  CHECK(back.calls == r.calls);
  CHECK(back.device == "cpu");
}

TEST_CASE("dry run: a built-in arm planted wrong is refused with its cell, tensor and problem") {
  const protocol p = layernorm_protocol();
  CHECK(refusal(p, planting("fused", &copy_ops))
            .starts_with("dry run: arm fused (kernel layernorm.fused) at fwd 4x96: y: element "));
  CHECK(refusal(p, planting("fused", &throwing_ops)) ==
        "dry run: arm fused (kernel layernorm.fused) at fwd 4x96: the arm failed in its "
        "correctness run: planted failure on the first call");
  // Its forward is right: the backward's unwritten gradient is found at fwd+bwd.
  const std::string lazy = refusal(p, planting("unfused", &lazy_backward_ops));
  CHECK(lazy.starts_with("dry run: arm unfused (kernel layernorm.unfused) at fwd+bwd 4x96: dx: "
                         "unwritten (still poison) at element 0"));
}

TEST_CASE("dry run: an arm that cannot take the shape here is not called, with the reason") {
  protocol p = layernorm_protocol();
  p.arms.push_back({"graph", "layernorm.fused", launch_mode::graph, 1}); // no capture on a CPU
  const dry_run_report r = dry_run_here(p, ".", cpu, builtin_resolver(), "");
  CHECK(r.calls.size() == 4);
  REQUIRE(r.not_called.size() == 2);
  CHECK(r.not_called[0].first == "graph");
  CHECK(r.not_called[0].second.starts_with("fwd: launch: graph: "));
  const auto notices = dry_run_notices(r);
  REQUIRE(notices.size() == 2);
  CHECK(notices[0].starts_with("dry run: arm graph was not called on this machine: fwd: "));
}

TEST_CASE("dry run: a device not usable here: not run, and a notice says so") {
  const protocol p = layernorm_protocol();
  const auto never = [](const std::string &, int) -> std::unique_ptr<device> {
    FAIL("no device may be made");
    return nullptr;
  };
  const dry_run_report r =
      dry_run_here(p, ".", never, builtin_resolver(), "no usable cuda device here: none");
  CHECK(r.device.empty());
  CHECK(r.calls.empty());
  CHECK(dry_run_line(r, p).empty());
  REQUIRE(dry_run_notices(r).size() == 1);
  CHECK(dry_run_notices(r)[0].starts_with(
      "the dry run was not done (no usable cuda device here: none): no arm and not the "
      "operation's reference were called"));
}

TEST_CASE("escape_control writes bidirectional controls as escapes") {
  CHECK(escape_control("a\u202eb\u2066c\u200fd\u061ce") == "a\\u202eb\\u2066c\\u200fd\\u061ce");
  CHECK(escape_control("plain \xc3\xa9 \u2014 text") == "plain \xc3\xa9 \u2014 text");
}
