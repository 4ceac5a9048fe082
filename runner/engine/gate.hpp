// The correctness gate (docs/engine.md): every cell's arm run once on fresh random inputs with
// poisoned outputs and compared with the float64 reference; its output comparison is also the
// timed samples' spot check.
#pragma once

#include "engine/buffers.hpp"
#include "engine/checked_inputs.hpp"
#include "engine/context.hpp"
#include "spec/reference.hpp"

#include <cstdint>
#include <string>

namespace prereg::engine_detail {

/// Runs the gate over every runnable cell of `ctx` (phase "correctness"): one correctness
/// record per cell into ctx.raw, in plan order; an outside arm that cannot be captured is
/// skipped instead, with the reason.
void check_correctness(run_context &ctx);

/// Compares every checked tensor `pass` writes in `set` with `ref` (on the host or on the
/// device); a failure clears rec.passed and, for the first one, sets rec.detail (prefixed by
/// `context`).
void check_outputs(const run_context &ctx, pass_kind pass, const shape &s, const buffer_set &set,
                   const checked_reference &ref, correctness_record &rec,
                   const std::string &context, const bound_arm &arm);

/// "element I (row R, col C)" of tensor `tensor` at shape `s` ("element I (col I)" in 1-D).
[[nodiscard]] std::string element_name(const operation_desc &op, std::size_t tensor, std::int64_t i,
                                       const shape &s);

} // namespace prereg::engine_detail
