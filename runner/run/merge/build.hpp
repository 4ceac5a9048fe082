// The merged report.json: a pure function of its (ordered) parts, so the audit can rebuild it.
#pragma once

#include "run/merge/part.hpp"
#include "spec/protocol.hpp"

#include <vector>

namespace prereg::merge_detail {

/// The merged report.json object of the ordered `parts` (check_rules), with `meta`
/// ({merge_id, merged_at}) and `tool` as given.
[[nodiscard]] json build_merged(const std::vector<part> &parts, merge_kind kind,
                                const protocol &proto, const json &meta, const json &tool);

} // namespace prereg::merge_detail
