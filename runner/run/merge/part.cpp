// A part of a merge (a report folder, already audited) and the small helpers the merge's files
// share.
#include "run/merge/part.hpp"

#include "base/fs.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

namespace prereg::merge_detail {
namespace fs = std::filesystem;

part read_part(const fs::path &dir) {
  part p;
  p.dir = dir;
  const fs::path file = dir / "report.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw invalid_input("not a report folder: it has no report.json", dir.string());
  p.bytes = read_file(file);
  p.raw = parse_json_strict(p.bytes, file.string());
  if (p.raw.is_object() && p.raw.contains("merge_version"))
    throw invalid_input("a merged report cannot be a part of another merge", dir.string());
  p.doc = report_from_json(p.raw, file.string());
  return p;
}

std::string kind_name(merge_kind k) { return k == merge_kind::shards ? "shards" : "replication"; }

std::string device_of(const part &p) { return p.doc.environment.value("device_name", "unknown"); }

std::string list_some(const std::vector<std::string> &items, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < max; ++i) {
    if (i != 0)
      out += ", ";
    out += items[i];
  }
  if (items.size() > max)
    out += fmt::format(" and {} more", items.size() - max);
  return out;
}

} // namespace prereg::merge_detail
