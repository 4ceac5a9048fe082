// A part of a merge (a report folder, already audited) and the small helpers the merge's files
// share.
#pragma once

#include "base/json.hpp"
#include "model/report_model.hpp"
#include "run/merge.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace prereg::merge_detail {

/// One part as read from its folder.
struct part {
  std::filesystem::path dir;
  std::string bytes; ///< report.json
  json raw;          ///< report.json parsed
  report_document doc;
};

/// The part in `dir`; `invalid_input` where `dir` holds no report.json or a merged report.
[[nodiscard]] part read_part(const std::filesystem::path &dir);

/// "shards" or "replication".
[[nodiscard]] std::string kind_name(merge_kind k);

/// The part's environment.device_name, or "unknown".
[[nodiscard]] std::string device_of(const part &p);

/// The first `max` items joined by ", ", then " and N more".
[[nodiscard]] std::string list_some(const std::vector<std::string> &items, std::size_t max = 8);

} // namespace prereg::merge_detail
