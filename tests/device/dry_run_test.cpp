// The dry run of `check` and `freeze` on the GPU (docs/engine.md, "The dry run"): the CUDA arms
// called once at the smallest shape on the device, a planted wrong arm refused with its line.
#include "device_helpers.hpp"

#include "prereg/error.hpp"
#include "run/dry_run.hpp"

#include <string>

using namespace prereg;
using namespace prereg::device_test;

namespace {

const auto cuda = [](const std::string &, int ordinal) { return make_cuda_device(ordinal); };

protocol layernorm_cuda() {
  return make_protocol("layernorm", dtype::fp16, {4096, 300, 1024}, {896},
                       {{"fused", "layernorm.fused", launch_mode::stream, 1},
                        {"unfused", "layernorm.unfused", launch_mode::stream, 1},
                        {"graph", "layernorm.fused", launch_mode::graph, 2}},
                       5, 2);
}

} // namespace

TEST_CASE("dry run on the GPU: each CUDA arm once per pass at the smallest shape, stream and "
          "graph") {
  const protocol p = layernorm_cuda();
  const dry_run_report r = dry_run_here(p, ".", cuda, builtin_resolver(), "");
  CHECK(r.device == "cuda");
  CHECK(r.not_called.empty());
  REQUIRE(r.calls.size() == 6); // 3 arms x 2 passes
  for (const auto &k : r.calls)
    CHECK(k.rows == 300);
  CHECK(dry_run_line(r, p).starts_with("dry run on cuda: each arm called once, every output "
                                       "matches operation layernorm's reference"));
}

TEST_CASE("dry run on the GPU: an arm planted wrong is refused before anything is stored") {
  const protocol p = layernorm_cuda();
  // The fused arm's forward with the unfused arm's backward is right; the rmsnorm kernel's
  // forward under the layernorm arm is not (no mean subtracted, no beta).
  const arm_info *rms = find_arm("cuda", "rmsnorm.fused");
  REQUIRE(rms != nullptr);
  const arm_code wrong = builtin_arm_code(*rms);
  const arm_resolver resolve = [&](const arm_spec &a, const arm_info &info) -> arm_code {
    return a.id == "unfused" ? wrong : builtin_arm_code(info);
  };
  try {
    (void)dry_run_here(p, ".", cuda, resolve, "");
    FAIL("the dry run passed a wrong arm");
  } catch (const error &e) {
    CHECK(e.code() == exit_code::invalid);
    CHECK(std::string(e.what()).starts_with(
        "dry run: arm unfused (kernel layernorm.unfused) at fwd 300x896: "));
  }
}
