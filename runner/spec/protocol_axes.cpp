// The experiment's space: the operation, the dtype, the axes' extents (prereg: 1 `shapes`,
// prereg: 2 `axes`), the passes, the operating point and the cell count.
#include "spec/operation_file.hpp"
#include "spec/protocol_sections.hpp"

#include <algorithm>
#include <string>

namespace prereg::protocol_detail {
namespace {

// The operations prereg: 1 knows (its schema is frozen: a later operation needs prereg: 2).
const std::vector<std::string> schema1_operations{"layernorm", "rmsnorm"};

// prereg: 2 `operation: {python: FILE, name: NAME}`: the registered descriptor of NAME when
// check/freeze/run have loaded it (its file must be FILE), else a stand-in over rows and cols.
const operation_desc &as_outside_operation(const node &n, std::int64_t schema, protocol &p) {
  if (schema == 1)
    fail(n, "an operation file (operation: {python, name}) needs prereg: 2");
  const fields f(n, "operation", {"python", "name"});
  const node &file = f.required("python");
  const node &name = f.required("name");
  p.op_file = as_string(file, "operation.python");
  if (p.op_file.empty() || p.op_file.size() > 1024 || p.op_file.find('\0') != std::string::npos)
    fail(file, "operation.python must be a file path of 1 to 1024 characters");
  p.op = as_string(name, "operation.name");
  if (p.op.empty() || p.op.size() > 64)
    fail(name, "operation.name must be 1 to 64 characters");
  for (const auto &b : all_operations())
    if (b.name == p.op)
      fail(name, fmt::format("operation.name {} is a built-in operation; write operation: {} "
                             "for it, or name the file's operation otherwise",
                             p.op, p.op));
  const operation_desc *op = find_outside_operation(p.op);
  if (op == nullptr)
    op = &outside_placeholder(p.op);
  return *op;
}

const operation_desc &as_operation(const node &n, std::int64_t schema) {
  std::vector<std::string> known;
  for (const auto &op : all_operations())
    known.push_back(op.name);
  const operation_desc *op = n.k == node::kind::scalar ? find_operation(n.value) : nullptr;
  if (op == nullptr)
    fail(n, fmt::format("operation must be one of {}, got {}", joined(known, " | "),
                        strict_yaml::describe(n)));
  if (schema == 1 && std::find(schema1_operations.begin(), schema1_operations.end(), op->name) ==
                         schema1_operations.end())
    fail(n, fmt::format("operation {} needs prereg: 2 (prereg: 1 knows {})", op->name,
                        joined(schema1_operations, " | ")));
  // The in-memory protocol holds the two axes every operation has today.
  if (op->axes != std::vector<std::string>{"rows", "cols"})
    fail(n, fmt::format("operation {} has axes {}; this build's protocols hold rows and cols only",
                        op->name, joined(op->axes)));
  return *op;
}

std::vector<std::int64_t> as_extents(const node &n, std::string_view what) {
  std::vector<std::int64_t> out;
  for (const node &item : as_list(n, what, strict_yaml::max_list_items)) {
    const auto v = as_int(item, what, 1, max_extent);
    if (std::find(out.begin(), out.end(), v) != out.end())
      fail(item, fmt::format("{} lists {} twice", what, v));
    out.push_back(v);
  }
  return out;
}

bool rows_cols(const std::vector<std::string> &axes) {
  return axes == std::vector<std::string>{"rows", "cols"};
}

// The axes a protocol's extents are read over: the operation's; for the stand-in of an
// operation file not loaded in this process, the axes as the protocol writes them.
std::vector<std::string> axes_of(const node &extents, const operation_desc &op) {
  if (!op.outside || !op.tensors.empty() || extents.k != node::kind::mapping)
    return op.axes;
  std::vector<std::string> written;
  for (const auto &[key, value] : extents.entries)
    written.push_back(key.value);
  return written.size() == 2 &&
                 std::find(written.begin(), written.end(), "rows") != written.end() &&
                 std::find(written.begin(), written.end(), "cols") != written.end()
             ? op.axes
             : written;
}

// The key that holds the extents: prereg: 1 `shapes`, prereg: 2 `axes`.
std::string extents_key(const protocol &p) { return p.schema == 1 ? "shapes" : "axes"; }

// prereg: 2: every axis of the operation, and no other, before the keys are read.
void check_axes(const node &axes, const operation_desc &op, const std::vector<std::string> &names) {
  for (const auto &[key, value] : axes.entries)
    if (std::find(names.begin(), names.end(), key.value) == names.end())
      fail(key, fmt::format("unknown axis '{}' in axes: operation {} has axes {}",
                            message_excerpt(key.value), op.name, joined(names)));
  for (const auto &axis : names)
    if (axes.find(axis) == nullptr)
      fail(axes, fmt::format("missing axis '{}' in axes: operation {} has axes {}", axis, op.name,
                             joined(names)));
}

} // namespace

const operation_desc &read_operation(const fields &top, protocol &p) {
  const node &op_node = top.required("operation");
  const operation_desc &op = op_node.k == node::kind::mapping
                                 ? as_outside_operation(op_node, p.schema, p)
                                 : as_operation(op_node, p.schema);
  p.op = op.name;
  p.type = as_enum<dtype>(top.required("dtype"), "dtype",
                          {{"fp32", dtype::fp32}, {"fp16", dtype::fp16}, {"bf16", dtype::bf16}});
  return op;
}

const node &read_extents(const fields &top, const operation_desc &op, protocol &p) {
  const std::string extents = extents_key(p);
  const node &shapes_node = top.required(extents);
  const std::vector<std::string> names = axes_of(shapes_node, op);
  const std::vector<std::string_view> axis_keys(names.begin(), names.end());
  if (p.schema == 2 && shapes_node.k == node::kind::mapping)
    check_axes(shapes_node, op, names);
  const fields shapes(shapes_node, extents, axis_keys);
  if (!rows_cols(names)) {
    for (const auto &axis : names)
      p.axes.push_back({axis, as_extents(shapes.required(axis), extents + "." + axis)});
    return shapes_node;
  }
  p.rows = as_extents(shapes.required("rows"), extents + ".rows");
  p.cols = as_extents(shapes.required("cols"), extents + ".cols");
  return shapes_node;
}

void check_integer_ranges(const node &extents, const operation_desc &op, const protocol &p) {
  if (std::none_of(op.tensors.begin(), op.tensors.end(), [](const tensor_desc &t) {
        return t.role == tensor_role::input && t.dist.kind != dist_kind::uniform;
      }))
    return;
  const std::size_t count = p.shape_count();
  for (std::size_t k = 0; k < count; ++k) { // the shapes in order, the last axis fastest
    shape s;
    if (p.axes.empty()) {
      s = op.shape_of(p.rows[k / p.cols.size()], p.cols[k % p.cols.size()]);
    } else {
      s.extents.resize(p.axes.size());
      std::size_t rest = k;
      for (std::size_t a = p.axes.size(); a-- > 0;) {
        s.extents[a] = p.axes[a].extents[rest % p.axes[a].extents.size()];
        rest /= p.axes[a].extents.size();
      }
    }
    if (const auto why = check_ranges_at(op, s)) {
      std::string at;
      for (std::size_t a = 0; a < op.axes.size(); ++a)
        at += fmt::format("{}{}={}", a == 0 ? "" : " ", op.axes[a], s.extents[a]);
      fail(extents, fmt::format("{} at {}", *why, at));
    }
  }
}

void read_passes(const fields &top, const operation_desc &op, protocol &p) {
  for (const node &item : as_list(top.required("passes"), "passes", 2)) {
    const auto pass = as_pass(item, "passes");
    if (std::find(p.passes.begin(), p.passes.end(), pass) != p.passes.end())
      fail(item, fmt::format("passes lists {} twice", to_string(pass)));
    if (std::find(op.passes.begin(), op.passes.end(), pass) == op.passes.end())
      fail(item, fmt::format("passes lists {}, which operation {} does not have", to_string(pass),
                             op.name));
    p.passes.push_back(pass);
  }
}

namespace {

// The operating point over named axes: every axis, each an extent the protocol lists.
void read_named_point(const node &n, protocol &p) {
  std::vector<std::string_view> keys;
  for (const auto &a : p.axes)
    keys.push_back(a.name);
  const fields point(n, "operating_point", keys);
  for (const auto &a : p.axes) {
    const node &v = point.required(a.name);
    const auto extent = as_int(v, "operating_point." + a.name, 1, max_extent);
    if (std::find(a.extents.begin(), a.extents.end(), extent) == a.extents.end())
      fail(v, fmt::format("operating_point.{} {} is not in axes.{}", a.name, extent, a.name));
    p.named_operating_point.push_back(extent);
  }
}

} // namespace

void read_operating_point(const fields &top, const operation_desc &op, protocol &p) {
  const node *op_node = top.optional("operating_point");
  if (op_node == nullptr || op_node->k == node::kind::null)
    return;
  const std::string extents = extents_key(p);
  if (!p.axes.empty()) {
    read_named_point(*op_node, p);
    return;
  }
  const fields point(*op_node, "operating_point",
                     std::vector<std::string_view>(op.axes.begin(), op.axes.end()));
  const node &r = point.required("rows");
  const node &c = point.required("cols");
  const auto rows = as_int(r, "operating_point.rows", 1, max_extent);
  const auto cols = as_int(c, "operating_point.cols", 1, max_extent);
  if (std::find(p.rows.begin(), p.rows.end(), rows) == p.rows.end())
    fail(r, fmt::format("operating_point.rows {} is not in {}.rows", rows, extents));
  if (std::find(p.cols.begin(), p.cols.end(), cols) == p.cols.end())
    fail(c, fmt::format("operating_point.cols {} is not in {}.cols", cols, extents));
  p.operating_point = std::make_pair(rows, cols);
}

void check_cells(const node &extents, const protocol &p) {
  if (!p.axes.empty()) {
    long double cells = static_cast<long double>(p.arms.size() * p.passes.size());
    std::string product = fmt::format("{} arms x {} passes", p.arms.size(), p.passes.size());
    for (const auto &a : p.axes) {
      cells *= static_cast<long double>(a.extents.size());
      product += fmt::format(" x {} {}", a.extents.size(), a.name);
    }
    if (cells > static_cast<long double>(max_cells))
      fail(extents, fmt::format("too many cells: {} = {:.0f}, more than the limit of {}", product,
                                static_cast<double>(cells), max_cells));
    return;
  }
  const auto cells =
      static_cast<std::int64_t>(p.arms.size() * p.passes.size() * p.rows.size() * p.cols.size());
  if (cells > max_cells)
    fail(extents, fmt::format("too many cells: {} arms x {} passes x {} rows x {} cols = {}, "
                              "more than the limit of {}",
                              p.arms.size(), p.passes.size(), p.rows.size(), p.cols.size(), cells,
                              max_cells));
}

} // namespace prereg::protocol_detail
