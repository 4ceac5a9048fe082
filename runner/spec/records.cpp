// A cell's two names: as JSON members and as a label in messages.
#include "spec/records.hpp"

#include "base/rng.hpp"
#include "prereg/error.hpp"
#include "spec/reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace prereg {

json shape_json(const cell_key &k) {
  if (!k.named())
    return {{"rows", k.rows}, {"cols", k.cols}};
  json list = json::array();
  for (const auto &a : k.shape)
    list.push_back({{"axis", a.axis}, {"extent", a.extent}});
  return {{"shape", std::move(list)}};
}

json to_json(const cell_key &k) {
  json j = shape_json(k);
  j["arm"] = k.arm;
  j["pass"] = std::string(to_string(k.pass));
  return j;
}

namespace {

bool positive_integer(const json &v) { return v.is_number_integer() && v.get<std::int64_t>() >= 1; }

std::string read_named(const json &j, cell_key &k) {
  const json &list = j.at("shape");
  if (!list.is_array() || list.empty() || list.size() > 8)
    return "shape must be a list of 1 to 8 {axis, extent}";
  for (const json &a : list) {
    if (!a.is_object() || a.size() != 2 || !a.contains("axis") || !a.contains("extent") ||
        !a.at("axis").is_string() || !positive_integer(a.at("extent")))
      return "shape lists an entry that is not {axis: NAME, extent: a positive integer}";
    k.shape.push_back({a.at("axis").get<std::string>(), a.at("extent").get<std::int64_t>()});
  }
  return "";
}

} // namespace

std::string read_shape_json(const json &j, bool expect_named, cell_key &k) {
  if (!j.is_object())
    return "is not an object";
  if (expect_named) {
    if (!j.contains("shape") || j.contains("rows") || j.contains("cols"))
      return "must name its shape as shape: [{axis, extent}, ...], not rows and cols";
    return read_named(j, k);
  }
  if (j.contains("shape") || !j.contains("rows") || !j.contains("cols"))
    return "must name its shape as rows and cols";
  if (!positive_integer(j.at("rows")) || !positive_integer(j.at("cols")))
    return "has a non-integer shape";
  k.rows = j.at("rows").get<std::int64_t>();
  k.cols = j.at("cols").get<std::int64_t>();
  return "";
}

std::string shape_label(const cell_key &k) {
  if (!k.named())
    return fmt::format("{}x{}", k.rows, k.cols);
  std::string out;
  for (const auto &a : k.shape)
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", a.axis, a.extent);
  return out;
}

std::string cell_label(const cell_key &k) {
  return fmt::format("{} {} {}", k.arm, to_string(k.pass), shape_label(k));
}

} // namespace prereg

namespace prereg {

namespace {

// Every combination of the named axes' extents, the first axis outermost.
void named_shapes(const protocol &p, std::size_t axis, cell_key &k, std::vector<cell_key> &out) {
  if (axis == p.axes.size()) {
    out.push_back(k);
    return;
  }
  for (const auto v : p.axes[axis].extents) {
    k.shape[axis].extent = v;
    named_shapes(p, axis + 1, k, out);
  }
}

bool holds(const std::vector<std::int64_t> &list, std::int64_t v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

} // namespace

std::vector<cell_key> protocol_shapes(const protocol &p) {
  std::vector<cell_key> out;
  if (p.axes.empty()) {
    for (const auto rows : p.rows)
      for (const auto cols : p.cols)
        out.push_back({{}, pass_kind::fwd, rows, cols, {}});
    return out;
  }
  cell_key k;
  for (const auto &a : p.axes)
    k.shape.push_back({a.name, 0});
  named_shapes(p, 0, k, out);
  return out;
}

bool selects(const protocol &p, const cell_selector &at, const cell_key &k) {
  if (std::find(at.passes.begin(), at.passes.end(), k.pass) == at.passes.end())
    return false;
  if (p.axes.empty())
    return !k.named() && holds(at.rows, k.rows) && holds(at.cols, k.cols);
  if (k.shape.size() != p.axes.size() || at.named.size() != p.axes.size())
    return false;
  for (std::size_t i = 0; i < p.axes.size(); ++i)
    if (k.shape[i].axis != p.axes[i].name || !holds(at.named[i], k.shape[i].extent))
      return false;
  return true;
}

} // namespace prereg

namespace prereg {

shape key_shape(const operation_desc &op, const cell_key &k) {
  if (!k.named())
    return op.shape_of(k.rows, k.cols);
  if (k.shape.size() != op.axes.size())
    throw std::logic_error(
        fmt::format("cell {} does not name operation {}'s axes", cell_label(k), op.name));
  shape s;
  for (std::size_t i = 0; i < k.shape.size(); ++i) {
    if (k.shape[i].axis != op.axes[i])
      throw std::logic_error(
          fmt::format("cell {} does not name operation {}'s axes", cell_label(k), op.name));
    s.extents.push_back(k.shape[i].extent);
  }
  return s;
}

cell_key key_of(std::string arm, pass_kind pass, const operation_desc &op, const shape &s) {
  cell_key k{std::move(arm), pass, 0, 0, {}};
  if (op.axes == std::vector<std::string>{"rows", "cols"}) {
    k.rows = s.extents.at(0);
    k.cols = s.extents.at(1);
    return k;
  }
  for (std::size_t i = 0; i < op.axes.size(); ++i)
    k.shape.push_back({op.axes[i], s.extents.at(i)});
  return k;
}

std::pair<std::int64_t, std::int64_t> flat_rows_cols(const cell_key &k) {
  if (!k.named())
    return {k.rows, k.cols};
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < k.shape.size(); ++i)
    rows *= k.shape[i].extent;
  return {rows, k.shape.back().extent};
}

std::uint64_t shape_seed(std::uint64_t plan_seed, pass_kind pass, const cell_key &k) {
  if (!k.named())
    return reference::cell_seed(plan_seed, pass, k.rows, k.cols);
  std::uint64_t s = stream_seed(plan_seed, stream_id::inputs);
  for (const auto &a : k.shape)
    s = rng(s ^ static_cast<std::uint64_t>(a.extent)).next();
  return rng(s ^ (pass == pass_kind::fwd ? 0u : 1u)).next();
}

} // namespace prereg
