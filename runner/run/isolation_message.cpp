// The sandbox's first message, read strictly by the parent (sandbox.hpp), and the notice of a
// loader that ran outside code with less than every wall.
#include "run/sandbox.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg::detail {

report_isolation read_isolation_message(const json_node &n) {
  n.object().only({"layers", "reason", "probes"}, "is not a member of the isolation message");
  report_isolation i;
  const json_node layers = n["layers"];
  const std::size_t count = layers.array_size();
  for (std::size_t k = 0; k < count; ++k) {
    std::string name = layers.at(k).str();
    if (!is_isolation_layer(name))
      layers.at(k).fail("is not an isolation layer");
    if (std::find(i.layers.begin(), i.layers.end(), name) != i.layers.end())
      layers.at(k).fail("repeats a layer");
    i.layers.push_back(std::move(name));
  }
  i.reason = n["reason"].str();
  const json_node probes = n["probes"];
  const std::size_t np = probes.array_size();
  for (std::size_t k = 0; k < np; ++k) {
    const json_node p = probes.at(k);
    p.object().only({"name", "outcome", "error", "detail"}, "is not a member of a probe");
    isolation_probe r{p["name"].str(), p["outcome"].str(), p["error"].str(), p["detail"].str()};
    if (probe_layer(r.name).empty())
      p["name"].fail("is not an isolation probe");
    if (r.outcome != "contained" && r.outcome != "escaped" && r.outcome != "not-tried")
      p["outcome"].fail("is not contained, escaped or not-tried");
    i.probes.push_back(std::move(r));
  }
  return i;
}

void finish_isolation(report_isolation &i, bool parent_not_dumpable) {
  if (parent_not_dumpable && i.layers.size() > 1) // a parent of a sandboxed process only
    i.layers.emplace_back("parent-not-dumpable");
  if (isolation_mode(i) == "none" && i.reason.empty())
    i.reason = "the sandbox stood no wall";
  i.level = isolation_level(i);
}

} // namespace prereg::detail
