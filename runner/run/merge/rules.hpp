// The rules of a merge: what parts may be merged, and in which order they are kept.
#pragma once

#include "run/merge/part.hpp"
#include "spec/protocol.hpp"

#include <vector>

namespace prereg::merge_detail {

/// Checks the rules of a merge of `parts` (integrity refusals are exit 3) and puts the parts in
/// their order: shards by index, replications by run id.
void check_rules(std::vector<part> &parts, merge_kind kind, const protocol &proto);

} // namespace prereg::merge_detail
