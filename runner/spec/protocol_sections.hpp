// The validators of a protocol's sections (docs/protocol.md), in the order `validate` runs
// them: each reads its keys of the top-level mapping into the protocol read so far.
#pragma once

#include "spec/operation.hpp"
#include "spec/protocol.hpp"
#include "spec/protocol_read.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace prereg::protocol_detail {

/// The largest extent of an axis (rows, cols): 2^31.
inline constexpr std::int64_t max_extent = std::int64_t{1} << 31;

/// `prereg`, read first since it decides which keys are allowed (1 when absent: the missing
/// key is reported with the others); the other schema's keys are refused here.
[[nodiscard]] std::int64_t read_schema(const node &root);
/// The top-level keys of `schema`.
[[nodiscard]] std::vector<std::string_view> top_keys(std::int64_t schema);
/// prereg, id, revision, title, hypothesis and device.
void read_identity(const fields &top, protocol &p);

/// operation and dtype; returns the operation.
[[nodiscard]] const operation_desc &read_operation(const fields &top, protocol &p);
/// shapes (prereg: 1) or axes (prereg: 2) into rows and cols; returns its node.
const node &read_extents(const fields &top, const operation_desc &op, protocol &p);
/// Every integer input of an operation file draws inside its type at every shape of `p`
/// (docs/operations.md, "Element types"); fails at `extents` (the axes) otherwise.
void check_integer_ranges(const node &extents, const operation_desc &op, const protocol &p);
void read_passes(const fields &top, const operation_desc &op, protocol &p);
void read_operating_point(const fields &top, const operation_desc &op, protocol &p);
/// Refuses more than max_cells cells, at the extents' node.
void check_cells(const node &extents, const protocol &p);

/// The arms, each checked against `lookup` (kernels) and the protocol read so far.
[[nodiscard]] std::vector<arm_spec> read_arms(const fields &top, const protocol &p,
                                              const kernel_lookup &lookup);

/// measurement, and the refusal of a protocol too long to measure.
void read_measurement(const fields &top, protocol &p);
[[nodiscard]] analysis_spec read_analysis(const fields &top);
/// correctness, each key defaulting on its own to default_tolerance(type).
[[nodiscard]] correctness_spec read_correctness(const fields &top, dtype type,
                                                const operation_desc &op);
/// prereg: 2 `replication: {devices: N, rule: all | majority | "at least K"}`.
[[nodiscard]] replication_spec read_replication(const node &n);

/// The predictions; returns a lower bound on the bootstrap's time [s]. A task or a grading's
/// protocol may have none (`predictions` absent).
[[nodiscard]] double read_predictions(const fields &top, const operation_desc &op, protocol &p);

/// prereg: 2 `task` (docs/grading.md), after the arms, axes, passes and measurement.
[[nodiscard]] task_spec read_task(const node &n, const protocol &p);
/// prereg: 2 `grading` (docs/grading.md), written by prereg into a grading's protocols.
[[nodiscard]] grading_spec read_grading(const node &n, const protocol &p);
/// Refuses an analysis that would take longer than max_estimated_s, at `predictions`.
void check_analysis_time(const fields &top, const protocol &p, double analysis_s);

} // namespace prereg::protocol_detail
