// The shard rule: shape groups dealt round robin; the parsers of K/N and of a device list.
#include "spec/shard.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace prereg {

std::vector<cell_key> all_cells(const protocol &p) {
  std::vector<cell_key> cells;
  const std::vector<cell_key> shapes = protocol_shapes(p);
  for (const auto &arm : p.arms)
    for (const auto pass : p.passes)
      for (cell_key k : shapes) {
        k.arm = arm.id;
        k.pass = pass;
        cells.push_back(std::move(k));
      }
  return cells;
}

namespace {

std::optional<std::int64_t> decimal(std::string_view s) {
  if (s.empty() || s.size() > 6 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

} // namespace

shard_spec parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  const auto k = slash == std::string_view::npos ? std::nullopt : decimal(text.substr(0, slash));
  const auto n = slash == std::string_view::npos ? std::nullopt : decimal(text.substr(slash + 1));
  if (!k || !n || *k < 1 || *n < 1 || *k > *n || *n > 10000)
    throw invalid_input(fmt::format("--shard must be K/N with 1 <= K <= N <= 10000, got '{}'",
                                    message_excerpt(text)));
  return {*k, *n};
}

std::string to_string(const shard_spec &s) { return fmt::format("{}/{}", s.index, s.count); }

json to_json(const shard_spec &s) { return {{"index", s.index}, {"count", s.count}}; }

shard_spec shard_from_json(const json &j, const std::string &where) {
  const auto bad = [&] {
    return invalid_input("shard must be {\"count\": N, \"index\": K} with 1 <= K <= N", where);
  };
  if (!j.is_object() || j.size() != 2 || !j.contains("index") || !j.contains("count"))
    throw bad();
  const json &k = j.at("index");
  const json &n = j.at("count");
  if (!k.is_number_integer() || !n.is_number_integer())
    throw bad();
  const shard_spec s{k.get<std::int64_t>(), n.get<std::int64_t>()};
  if (s.index < 1 || s.count < 1 || s.index > s.count || s.count > 10000)
    throw bad();
  return s;
}

std::vector<shape_group> shape_groups(const protocol &p) {
  std::vector<shape_group> groups;
  for (const auto &c : all_cells(p)) {
    const auto it = std::find_if(groups.begin(), groups.end(),
                                 [&](const shape_group &g) { return g.holds(c); });
    if (it != groups.end())
      it->cells.push_back(c);
    else
      groups.push_back({c.pass, c.rows, c.cols, {c}});
  }
  return groups;
}

std::int64_t shard_of_group(std::size_t g, std::int64_t count) {
  return static_cast<std::int64_t>(g % static_cast<std::size_t>(count)) + 1;
}

std::vector<cell_key> shard_cells(const protocol &p, const shard_spec &s) {
  const auto groups = shape_groups(p);
  if (static_cast<std::size_t>(s.count) > groups.size())
    throw invalid_input(fmt::format("--shard {}: the protocol has {} shape group(s) (pass x rows "
                                    "x cols), fewer than {} shards: a shard would be empty",
                                    to_string(s), groups.size(), s.count));
  std::vector<cell_key> out;
  for (const auto &c : all_cells(p)) {
    const auto it = std::find_if(groups.begin(), groups.end(),
                                 [&](const shape_group &g) { return g.holds(c); });
    if (shard_of_group(static_cast<std::size_t>(it - groups.begin()), s.count) == s.index)
      out.push_back(c);
  }
  return out;
}

std::int64_t shard_of_cell(const protocol &p, const cell_key &cell, std::int64_t count) {
  const auto groups = shape_groups(p);
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (std::find(groups[g].cells.begin(), groups[g].cells.end(), cell) != groups[g].cells.end())
      return shard_of_group(g, count);
  throw invalid_input(fmt::format("cell {} is not a cell of protocol {}", cell_label(cell), p.id));
}

std::vector<int> parse_device_list(std::string_view text) {
  std::vector<int> out;
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    const auto piece =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    const auto v = decimal(piece);
    if (!v || *v > 1024)
      throw invalid_input(fmt::format("--devices must be device ordinals separated by commas "
                                      "(e.g. 0,1,2,3), got '{}'",
                                      message_excerpt(text)));
    out.push_back(static_cast<int>(*v));
    if (comma == std::string_view::npos)
      break;
    start = comma + 1;
  }
  if (out.size() > 64)
    throw invalid_input(fmt::format("--devices names {} devices, more than 64", out.size()));
  return out;
}

} // namespace prereg
