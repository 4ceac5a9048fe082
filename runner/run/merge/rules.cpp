// The rules of a merge: one protocol, no run twice; a replication pools as many complete reports
// as the protocol's rule names; shards of one device model cover the plan exactly once.
#include "run/merge/rules.hpp"

#include "prereg/error.hpp"
#include "spec/shard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>

namespace prereg::merge_detail {
namespace {

// Every part: one protocol, not EXPLORATORY, no run twice.
void check_common(const std::vector<part> &parts) {
  if (parts.empty())
    throw invalid_input("merge: give at least one report folder");
  const std::string hash = parts.front().doc.protocol.hash;
  std::set<std::string> run_ids;
  for (const auto &p : parts) {
    if (p.doc.protocol.hash != hash)
      throw integrity_error(fmt::format("the parts are runs of different protocols: {} and {}",
                                        hash.substr(0, 12), p.doc.protocol.hash.substr(0, 12)),
                            p.dir.string());
    if (p.doc.exploratory)
      throw integrity_error("an EXPLORATORY report cannot be merged", p.dir.string());
    if (!run_ids.insert(p.doc.run.run_id).second)
      throw integrity_error(fmt::format("run {} is given twice", p.doc.run.run_id), p.dir.string());
  }
}

void check_replication(std::vector<part> &parts, const protocol &proto) {
  if (!proto.replication)
    throw invalid_input(fmt::format("protocol {} declares no replication rule (prereg: 2 "
                                    "`replication: {{devices: N, rule: ...}}`)",
                                    proto.id));
  for (const auto &p : parts)
    if (p.doc.shard)
      throw integrity_error(fmt::format("a replication pools complete reports; this one is "
                                        "shard {} (merge its shards first)",
                                        to_string(*p.doc.shard)),
                            p.dir.string());
  if (static_cast<std::int64_t>(parts.size()) != proto.replication->devices)
    throw integrity_error(fmt::format("the protocol's replication pools {} devices' reports; "
                                      "{} given",
                                      proto.replication->devices, parts.size()));
  std::sort(parts.begin(), parts.end(),
            [](const part &a, const part &b) { return a.doc.run.run_id < b.doc.run.run_id; });
}

// Every part is a shard, all of one device model.
void check_shard_devices(const std::vector<part> &parts) {
  const std::string device = device_of(parts.front());
  for (const auto &p : parts) {
    if (!p.doc.shard)
      throw integrity_error("this report is not a shard (`prereg run --shard K/N` writes them)",
                            p.dir.string());
    if (device_of(p) != device)
      throw integrity_error(fmt::format("the shards ran on different device models ({} and {}); "
                                        "a merge keeps one model (replication pools several)",
                                        device, device_of(p)),
                            p.dir.string());
  }
}

// The parts by shard index (1..N; nullptr where missing), refusing another N or an index twice.
std::vector<const part *> shards_by_index(const std::vector<part> &parts) {
  const std::int64_t n = parts.front().doc.shard->count;
  std::vector<const part *> by_index(static_cast<std::size_t>(n) + 1, nullptr);
  for (const auto &p : parts) {
    if (p.doc.shard->count != n)
      throw integrity_error(fmt::format("the parts split the plan differently: shard {} and "
                                        "shard {}",
                                        to_string(*parts.front().doc.shard),
                                        to_string(*p.doc.shard)),
                            p.dir.string());
    const auto k = static_cast<std::size_t>(p.doc.shard->index);
    if (by_index[k] != nullptr)
      throw integrity_error(fmt::format("shard {} is given twice ({} and {})",
                                        to_string(*p.doc.shard), by_index[k]->doc.run.run_id,
                                        p.doc.run.run_id),
                            p.dir.string());
    by_index[k] = &p;
  }
  return by_index;
}

// Every shard 1..N is present, else the refusal names the missing cells.
void check_cover(const std::vector<const part *> &by_index, const protocol &proto,
                 const std::string &hash) {
  const auto n = static_cast<std::int64_t>(by_index.size()) - 1;
  std::vector<std::string> missing_shards;
  std::vector<std::string> missing_cells;
  for (std::int64_t k = 1; k <= n; ++k) {
    if (by_index[static_cast<std::size_t>(k)] != nullptr)
      continue;
    missing_shards.push_back(to_string(shard_spec{k, n}));
    for (const auto &c : shard_cells(proto, {k, n}))
      missing_cells.push_back(cell_label(c));
  }
  if (!missing_shards.empty())
    throw integrity_error(fmt::format("incomplete cover: shard(s) {} missing, so {} cell(s) are "
                                      "missing: {}; rerun with `prereg run {} --shard K/N`",
                                      list_some(missing_shards), missing_cells.size(),
                                      list_some(missing_cells, 12), hash.substr(0, 12)));
}

// Disjoint: every cell of the union is in one part only (each part's audit tied its cells to its
// shard; this guards the rule itself).
void check_disjoint(const std::vector<part> &parts) {
  std::vector<cell_key> seen;
  for (const auto &p : parts)
    for (const auto &c : p.doc.cells) {
      if (std::find(seen.begin(), seen.end(), c.key) != seen.end())
        throw integrity_error(fmt::format("cell {} is in two parts", cell_label(c.key)),
                              p.dir.string());
      seen.push_back(c.key);
    }
}

} // namespace

void check_rules(std::vector<part> &parts, merge_kind kind, const protocol &proto) {
  check_common(parts);
  if (kind == merge_kind::replication) {
    check_replication(parts, proto);
    return;
  }
  check_shard_devices(parts);
  check_cover(shards_by_index(parts), proto, parts.front().doc.protocol.hash);
  check_disjoint(parts);
  std::sort(parts.begin(), parts.end(),
            [](const part &a, const part &b) { return a.doc.shard->index < b.doc.shard->index; });
}

} // namespace prereg::merge_detail
