// The protocol: `validate`, a driver over the per-section validators (protocol_sections.hpp)
// in the order docs/protocol.md lists the sections, and the protocol's small lookups.
#include "spec/protocol.hpp"

#include "base/yaml_strict.hpp"
#include "spec/protocol_sections.hpp"

#include <fmt/format.h>

namespace prereg {
namespace {

using namespace protocol_detail;

protocol validate(const node &root, const kernel_lookup &lookup) {
  // The version decides which keys are allowed, so it is read first.
  const fields top(root, "the protocol", top_keys(read_schema(root)));
  protocol p;
  read_identity(top, p);
  const operation_desc &op = read_operation(top, p);
  const node &extents = read_extents(top, op, p);
  read_passes(top, op, p);
  read_operating_point(top, op, p);
  p.arms = read_arms(top, p, lookup);
  check_cells(extents, p);
  check_integer_ranges(extents, op, p);
  read_measurement(top, p);
  p.analysis = read_analysis(top);
  p.correctness = read_correctness(top, p.type, op);
  const double analysis_s = read_predictions(top, op, p);
  if (const node *r = top.optional("replication"))
    p.replication = read_replication(*r);
  if (const node *t = top.optional("task"))
    p.task = read_task(*t, p);
  if (const node *g = top.optional("grading")) {
    if (p.task)
      fail(*g, "a protocol is a task or a grading's protocol, not both: leave grading out");
    p.grading = read_grading(*g, p);
  }
  check_analysis_time(top, p, analysis_s);
  return p;
}

} // namespace

std::string arm_spec::label() const {
  switch (source) {
  case arm_source::plugin:
    return fmt::format("plugin {}:{}", file, entry);
  case arm_source::python:
    return fmt::format("python {}:{}", file, entry);
  case arm_source::kernel:
    break;
  }
  return fmt::format("kernel {}", kernel);
}

const arm_spec *find_arm_spec(const protocol &p, std::string_view id) {
  for (const auto &a : p.arms)
    if (a.id == id)
      return &a;
  return nullptr;
}

correctness_spec default_tolerance(dtype d) {
  switch (d) {
  case dtype::fp32:
    return {1e-5, 1e-5};
  case dtype::fp16:
    return {1e-3, 1e-3};
  case dtype::bf16:
    return {1.6e-2, 1e-2};
  default: // not a protocol's dtype (an operation file's tensor type): no default
    break;
  }
  return {};
}

protocol parse_protocol(std::string_view yaml_text, const std::string &file,
                        const kernel_lookup &arms) {
  return validate(strict_yaml::parse(yaml_text, file), arms);
}

protocol protocol_from_json(const json &body, const std::string &where, const kernel_lookup &arms) {
  return validate(strict_yaml::from_json(body, where), arms);
}

} // namespace prereg
