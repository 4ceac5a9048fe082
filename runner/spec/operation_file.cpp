// Outside operations (operation_file.hpp): the descriptor JSON both ways, validated strictly so
// that every malformed declaration is one line naming the operation, and the process's table.
#include "spec/operation_file.hpp"

#include "crypto/crypto.hpp"
#include "prereg/error.hpp"
#include "spec/op_formula.hpp"
#include "spec/protocol.hpp"
#include "spec/reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>

namespace prereg {
namespace {

constexpr std::size_t max_tensors = 64;
constexpr std::size_t max_axes = 8;

/// Every element type a tensor may declare besides `dtype`, in the order messages list them.
constexpr dtype element_types[] = {dtype::fp32,     dtype::fp16,   dtype::bf16,  dtype::fp8_e4m3,
                                   dtype::fp8_e5m2, dtype::int8,   dtype::uint8, dtype::int32,
                                   dtype::int64,    dtype::boolean};

/// Why integers [lo, hi) cannot be drawn into `type`, or nullopt.
std::optional<std::string> range_fault(double lo, double hi, dtype type) {
  const auto [least, most] = reference::integer_limits(type);
  if (!(lo < hi))
    return fmt::format("[{:.17g}, {:.17g}) is empty", lo, hi);
  if (lo < least || hi - 1 > most)
    return fmt::format("[{:.17g}, {:.17g}) is outside {} (its values: {:.17g} to {:.17g}{})", lo,
                       hi, to_string(type), least, most,
                       type == dtype::int64 ? ", those a float64 holds exactly" : "");
  return std::nullopt;
}

bool is_identifier(const std::string &s) {
  if (s.empty() || s.size() > 64 || !(std::islower(static_cast<unsigned char>(s[0])) != 0))
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) != 0 ||
           std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

/// Strict reading of one descriptor: every failure names the operation.
class reader {
public:
  reader(std::string name, std::string where)
      : m_name(std::move(name)), m_where(std::move(where)) {}

  [[noreturn]] void fail(const std::string &what) const {
    throw invalid_input(fmt::format("operation {}: {}", m_name, what), m_where);
  }
  void only(const json &j, const std::string &what, std::initializer_list<std::string_view> keys,
            std::initializer_list<std::string_view> required) const {
    if (!j.is_object())
      fail(fmt::format("{} must be a mapping, got {}", what, j.type_name()));
    for (const auto &[k, v] : j.items())
      if (std::find(keys.begin(), keys.end(), k) == keys.end())
        fail(fmt::format("unknown key '{}' in {} (allowed: {})", k, what, fmt::join(keys, ", ")));
    for (auto k : required)
      if (!j.contains(k))
        fail(fmt::format("{} lacks '{}'", what, k));
  }
  std::string str(const json &j, const std::string &what) const {
    if (!j.is_string())
      fail(fmt::format("{} must be a string, got {}", what, j.type_name()));
    return j.get<std::string>();
  }
  double number(const json &j, const std::string &what) const {
    if (!j.is_number() || !std::isfinite(j.get<double>()))
      fail(fmt::format("{} must be a finite number", what));
    return j.get<double>();
  }
  std::vector<std::string> names(const json &j, const std::string &what, std::size_t most) const {
    if (!j.is_array() || j.empty() || j.size() > most)
      fail(fmt::format("{} must be a list of 1 to {} names", what, most));
    std::vector<std::string> out;
    for (const auto &item : j) {
      const std::string s = str(item, what);
      if (std::find(out.begin(), out.end(), s) != out.end())
        fail(fmt::format("{} lists '{}' twice", what, s));
      out.push_back(s);
    }
    return out;
  }

  std::vector<std::string> axes(const json &j) const {
    std::vector<std::string> out = names(j, "axes", max_axes);
    for (const auto &a : out)
      if (!is_identifier(a) || a == "s" || a == "pass")
        fail(fmt::format("axis '{}' is not a name [a-z][a-z0-9_]* (nor s or pass)", a));
    return out;
  }

  tensor_desc tensor(const json &j, std::size_t i, const std::vector<std::string> &axes) const {
    const std::string what = fmt::format("tensors[{}]", i);
    only(j, what, {"name", "role", "dims", "element", "passes", "dist"},
         {"name", "role", "dims", "passes"});
    tensor_desc t;
    t.name = str(j["name"], what + ".name");
    if (!is_identifier(t.name))
      fail(fmt::format("{}.name '{}' is not a name [a-z][a-z0-9_]*", what, t.name));
    if (t.name == "on_device") // the reference's t.on_device (docs/operations.md)
      fail(fmt::format("{}.name 'on_device' is the reference's own attribute", what));
    const std::string role = str(j["role"], what + ".role");
    if (role == "input")
      t.role = tensor_role::input;
    else if (role == "output")
      t.role = tensor_role::output;
    else if (role == "saved")
      t.role = tensor_role::saved;
    else
      fail(fmt::format("tensor {} has the unknown role '{}' (roles: input, output, saved)", t.name,
                       role));
    t.dims = dims(j["dims"], what + ".dims");
    for (const auto &d : t.dims)
      if (std::find(axes.begin(), axes.end(), d) == axes.end())
        fail(fmt::format("tensor {} has dim '{}', which names no axis (axes: {})", t.name, d,
                         fmt::join(axes, ", ")));
    element(j, what, t);
    // An empty list: drawn but used by no pass (RMSNorm's beta keeps the draws of LayerNorm's).
    const bool unused = j["passes"].is_array() && j["passes"].empty();
    for (const auto &p :
         unused ? std::vector<std::string>{} : names(j["passes"], what + ".passes", 2)) {
      if (p != "fwd" && p != "bwd")
        fail(fmt::format("tensor {} lists pass '{}' (fwd: the forward; bwd: the backward of "
                         "fwd+bwd)",
                         t.name, p));
      (p == "fwd" ? t.fwd : t.bwd) = true;
    }
    t.produced_by_bwd = !t.fwd && t.bwd;
    t.checked = t.role != tensor_role::input;
    if (t.role == tensor_role::input) {
      if (!j.contains("dist"))
        fail(fmt::format("input {} lacks 'dist' (how it is drawn: {})", t.name,
                         is_integral(t.type(dtype::fp32)) ? "{int: [LO, HI]} or {index_of: "
                                                            "[TENSOR, AXIS]}"
                                                          : "{lo, hi}"));
      t.dist = is_integral(t.type(dtype::fp32)) ? int_dist(j["dist"], t, axes) : dist(j["dist"], t);
    } else if (j.contains("dist")) {
      fail(fmt::format("{} {} has 'dist'; only an input is drawn", role, t.name));
    }
    return t;
  }

  /// A list of 0 to 8 distinct names: a tensor's dims ([]: a 0-dim tensor).
  std::vector<std::string> dims(const json &j, const std::string &what) const {
    if (j.is_array() && j.empty())
      return {};
    if (!j.is_array())
      fail(fmt::format("{} must be a list of 0 to {} axis names ([] for a 0-dim tensor: a loss, "
                       "a norm, a count), got {}",
                       what, max_axes, j.type_name()));
    return names(j, what, max_axes);
  }

  /// The tensor's `element` (default: the protocol's dtype).
  void element(const json &j, const std::string &what, tensor_desc &t) const {
    const std::string e = j.contains("element") ? str(j["element"], what + ".element") : "dtype";
    if (e == "dtype")
      return;
    for (const dtype d : element_types)
      if (e == to_string(d)) {
        t.element = element_rule::fixed;
        t.fixed = d;
        return;
      }
    std::vector<std::string> known{"dtype (the protocol's)"};
    for (const dtype d : element_types)
      known.emplace_back(to_string(d));
    fail(fmt::format("tensor {} has the unknown element '{}' (elements: {})", t.name, e,
                     fmt::join(known, ", ")));
  }

  input_distribution dist(const json &j, const tensor_desc &t) const {
    const std::string what = "dist of " + t.name;
    if (j.is_object() && (j.contains("int") || j.contains("index_of")))
      fail(fmt::format("{}: {} is for an integer or bool input; {} is {}", what,
                       j.contains("int") ? "int" : "index_of", t.name,
                       t.element == element_rule::fixed
                           ? to_string(t.fixed)
                           : std::string_view("the protocol's dtype")));
    only(j, what, {"lo", "hi", "row_offset"}, {"lo", "hi"});
    input_distribution d;
    d.lo = number(j["lo"], what + ".lo");
    d.hi = number(j["hi"], what + ".hi");
    d.row_offset = j.contains("row_offset") ? number(j["row_offset"], what + ".row_offset") : 0.0;
    if (!(d.lo < d.hi) || d.row_offset < 0)
      fail(fmt::format("{} must have lo < hi and row_offset >= 0", what));
    if (t.element == element_rule::fixed && is_fp8(t.fixed)) {
      const double top = reference::largest_finite(t.fixed);
      if (d.lo < -top || d.hi > top)
        fail(fmt::format("{}: [{:g}, {:g}] is outside {} (its largest finite value is {:g})", what,
                         d.lo, d.hi, to_string(t.fixed), top));
      if (d.row_offset != 0)
        fail(fmt::format("{}: row_offset is for fp32, fp16 and bf16 inputs, not {}", what,
                         to_string(t.fixed)));
      if (reference::fp8_fallback(d.lo, d.hi, t.fixed) == 0.0)
        fail(fmt::format("{}: [{:g}, {:g}] holds no nonzero {} value", what, d.lo, d.hi,
                         to_string(t.fixed)));
    }
    return d;
  }

  /// An integer bound: a JSON integer or a formula string over the axes (a unary minus allowed).
  std::string bound(const json &j, const std::string &what,
                    const std::vector<std::string> &axes) const {
    if (j.is_number_integer())
      return std::to_string(j.get<std::int64_t>());
    if (!j.is_string())
      fail(fmt::format("{} must be an integer or a formula over the axes, got {}", what,
                       j.is_number() ? "a fractional number" : j.type_name()));
    std::string text = j.get<std::string>();
    const formula_env env{&axes, nullptr, 1, nullptr};
    try {
      (void)eval_bound(text, env, what);
    } catch (const error &e) {
      fail(e.what());
    }
    return text;
  }

  /// An integer or bool input's dist: {int: [LO, HI]} or {index_of: [TENSOR, AXIS]}.
  input_distribution int_dist(const json &j, const tensor_desc &t,
                              const std::vector<std::string> &axes) const {
    const std::string what = "dist of " + t.name;
    const std::string type(to_string(t.fixed));
    if (!j.is_object() || j.size() != 1 || !(j.contains("int") || j.contains("index_of")))
      fail(fmt::format("{}: {} is {}: draw it with {{int: [LO, HI]}} (integers in [LO, HI)) or "
                       "{{index_of: [TENSOR, AXIS]}} (indices into TENSOR's axis AXIS)",
                       what, t.name, type));
    input_distribution d;
    const bool range = j.contains("int");
    const json &pair = range ? j["int"] : j["index_of"];
    if (!pair.is_array() || pair.size() != 2)
      fail(fmt::format("{}.{} must be a list of two: {}", what, range ? "int" : "index_of",
                       range ? "[LO, HI]" : "[TENSOR, AXIS]"));
    if (range) {
      d.kind = dist_kind::integer;
      d.int_lo = bound(pair[0], what + ".int[0]", axes);
      d.int_hi = bound(pair[1], what + ".int[1]", axes);
    } else {
      d.kind = dist_kind::index_of;
      d.index_tensor = str(pair[0], what + ".index_of[0]");
      d.index_axis = str(pair[1], what + ".index_of[1]");
    }
    return d;
  }
  void passes(const json &j, operation_desc &op) const {
    only(j, "passes", {"fwd", "fwd+bwd"}, {"fwd"});
    for (const auto &[key, value] : j.items()) {
      const pass_kind pass = key == "fwd" ? pass_kind::fwd : pass_kind::fwd_bwd;
      only(value, "passes." + key, {"bytes", "flops", "read_bytes", "write_bytes"}, {});
      op_pass_formulas f;
      f.pass = pass;
      std::vector<std::pair<std::string, std::int64_t>> sizes; // s_NAME: every tensor's (1 here)
      for (const auto &t : op.tensors)
        sizes.emplace_back(t.name, 1);
      const formula_env env{&op.axes, nullptr, 1, &sizes};
      for (auto [k, target] :
           {std::pair{"bytes", &f.bytes}, std::pair{"flops", &f.flops},
            std::pair{"read_bytes", &f.read_bytes}, std::pair{"write_bytes", &f.write_bytes}}) {
        if (!value.contains(k))
          continue;
        *target = str(value[k], fmt::format("passes.{}.{}", key, k));
        try {
          (void)eval_formula(*target, env, fmt::format("the {} formula of pass {}", k, key));
        } catch (const error &e) {
          fail(e.what());
        }
      }
      // read_bytes / write_bytes split `bytes` (op_formula.hpp)
      if (const auto why =
              traffic_split_fault(f.bytes, f.read_bytes, f.write_bytes, env, "passes." + key);
          !why.empty())
        fail(why);
      op.passes.push_back(pass);
      op.formulas.push_back(std::move(f));
    }
    std::sort(op.passes.begin(), op.passes.end());
    std::sort(op.formulas.begin(), op.formulas.end(),
              [](const auto &a, const auto &b) { return a.pass < b.pass; });
    const bool backward = std::any_of(op.tensors.begin(), op.tensors.end(),
                                      [](const tensor_desc &t) { return t.bwd; });
    if (backward != (op.passes.size() == 2))
      fail(backward ? "a tensor lists bwd, but passes has no fwd+bwd"
                    : "passes has fwd+bwd, but no tensor lists bwd");
  }

  void tolerance(const json &j, operation_desc &op) const {
    only(j, "tolerance", {"fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2"}, {});
    for (const auto &[key, value] : j.items()) {
      only(value, "tolerance." + key, {"rtol", "atol"}, {"rtol", "atol"});
      op_tolerance t;
      for (const dtype d : element_types)
        if (key == to_string(d))
          t.type = d;
      t.rtol = number(value["rtol"], "tolerance." + key + ".rtol");
      t.atol = number(value["atol"], "tolerance." + key + ".atol");
      if (t.rtol < 0 || t.atol < 0)
        fail(fmt::format("tolerance.{} must be 0 or more", key));
      op.tolerances.push_back(t);
    }
  }

  /// What only the whole declaration shows: index_of names another tensor and one of its dims;
  /// constant integer ranges lie inside their type; a checked fp8 tensor has its tolerance.
  void check_types(const operation_desc &op) const {
    for (const auto &t : op.tensors) {
      const dtype et = t.type(dtype::fp32);
      if (t.role == tensor_role::input && t.dist.kind == dist_kind::index_of) {
        const int j = op.index_of(t.dist.index_tensor);
        if (j < 0 || t.dist.index_tensor == t.name)
          fail(fmt::format("dist of {}: index_of names '{}', which is no other tensor of the "
                           "operation",
                           t.name, t.dist.index_tensor));
        const auto &dims = op.tensors[static_cast<std::size_t>(j)].dims;
        if (std::find(dims.begin(), dims.end(), t.dist.index_axis) == dims.end())
          fail(fmt::format("dist of {}: index_of indexes axis '{}', which is not a dim of {} "
                           "(dims: {})",
                           t.name, t.dist.index_axis, t.dist.index_tensor,
                           dims.empty() ? std::string("none: a 0-dim tensor")
                                        : fmt::format("{}", fmt::join(dims, ", "))));
      }
      if (t.role == tensor_role::input && t.dist.kind == dist_kind::integer)
        check_constant_range(t, et);
      if (t.checked && is_fp8(et) &&
          std::none_of(op.tolerances.begin(), op.tolerances.end(),
                       [&](const op_tolerance &o) { return o.type == et; }))
        fail(fmt::format("tensor {} is {} and checked: declare tolerance.{} (fp8 has no default "
                         "of prereg's)",
                         t.name, to_string(et), to_string(et)));
    }
  }

  /// A range whose bounds are both integers is checked here; one over the axes, at the
  /// protocol's shapes (check_ranges_at).
  void check_constant_range(const tensor_desc &t, dtype et) const {
    const auto literal = [](const std::string &b) {
      return !b.empty() && std::all_of(b.begin() + (b[0] == '-' ? 1 : 0), b.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      }) && b != "-";
    };
    if (!literal(t.dist.int_lo) || !literal(t.dist.int_hi))
      return;
    const double lo = std::stod(t.dist.int_lo), hi = std::stod(t.dist.int_hi);
    if (const auto why = range_fault(lo, hi, et))
      fail(fmt::format("dist of {}: {}", t.name, *why));
  }

  void check_roles(const operation_desc &op) const {
    const auto has = [&](tensor_role r) {
      return std::any_of(op.tensors.begin(), op.tensors.end(),
                         [&](const tensor_desc &t) { return t.role == r; });
    };
    if (!has(tensor_role::input))
      fail("declares no input tensor");
    if (!has(tensor_role::output))
      fail("declares no output tensor");
  }

private:
  std::string m_name;
  std::string m_where;
};

/// A bound as the descriptor writes it: an integer literal as a JSON integer, else the formula.
json bound_to_json(const std::string &b) {
  const bool literal = !b.empty() && b != "-" && b.size() < 19 &&
                       std::all_of(b.begin() + (b[0] == '-' ? 1 : 0), b.end(), [](char c) {
                         return std::isdigit(static_cast<unsigned char>(c)) != 0;
                       });
  return literal ? json(std::stoll(b)) : json(b);
}

json dist_to_json(const input_distribution &d) {
  switch (d.kind) {
  case dist_kind::integer:
    return {{"int", {bound_to_json(d.int_lo), bound_to_json(d.int_hi)}}};
  case dist_kind::index_of:
    return {{"index_of", {d.index_tensor, d.index_axis}}};
  case dist_kind::uniform:
    break;
  }
  return {{"lo", d.lo}, {"hi", d.hi}, {"row_offset", d.row_offset}};
}

std::deque<operation_desc> &outside_table() {
  static std::deque<operation_desc> table; // a deque: registered descriptors never move
  return table;
}

} // namespace

std::optional<std::string> check_ranges_at(const operation_desc &op, const shape &s) {
  for (std::size_t i = 0; i < op.tensors.size(); ++i) {
    const tensor_desc &t = op.tensors[i];
    if (t.role != tensor_role::input || t.dist.kind == dist_kind::uniform)
      continue;
    try {
      const input_distribution d = op.dist_at(i, s);
      if (const auto why = range_fault(d.lo, d.hi, t.type(dtype::fp32)))
        return fmt::format(
            "operation {}: the {} of {} {}", op.name,
            t.dist.kind == dist_kind::index_of
                ? fmt::format("indices into {}'s axis {}", t.dist.index_tensor, t.dist.index_axis)
                : std::string("range"),
            t.name, *why);
    } catch (const error &e) {
      return e.what();
    }
  }
  return std::nullopt;
}

json operation_to_json(const operation_desc &op) {
  json tensors = json::array();
  for (const auto &t : op.tensors) {
    json passes = json::array();
    if (t.fwd)
      passes.push_back("fwd");
    if (t.bwd)
      passes.push_back("bwd");
    json j = {{"name", t.name},
              {"role", t.role == tensor_role::input    ? "input"
                       : t.role == tensor_role::output ? "output"
                                                       : "saved"},
              {"dims", t.dims.empty() ? json::array() : json(t.dims)},
              {"element", t.element == element_rule::fixed ? std::string(to_string(t.fixed))
                                                           : std::string("dtype")},
              {"passes", passes}};
    if (t.role == tensor_role::input)
      j["dist"] = dist_to_json(t.dist);
    tensors.push_back(std::move(j));
  }
  json passes = json::object();
  for (const auto p : op.passes) {
    json f = json::object();
    if (const auto *d = op.formulas_of(p)) {
      if (!d->bytes.empty())
        f["bytes"] = d->bytes;
      if (!d->flops.empty())
        f["flops"] = d->flops;
      if (!d->read_bytes.empty()) // only where declared: older descriptors keep their bytes
        f["read_bytes"] = d->read_bytes;
      if (!d->write_bytes.empty())
        f["write_bytes"] = d->write_bytes;
    }
    passes[std::string(to_string(p))] = f;
  }
  json tolerance = json::object();
  for (const auto &t : op.tolerances)
    tolerance[std::string(to_string(t.type))] = {{"rtol", t.rtol}, {"atol", t.atol}};
  json out = {{"name", op.name},       {"summary", op.summary}, {"axes", op.axes},
              {"tensors", tensors},    {"passes", passes},      {"eps", op.eps},
              {"tolerance", tolerance}};
  out["reference"] = op.outside ? json(op.reference_name) : json("compiled");
  return out;
}

operation_desc operation_from_json(const json &d, const std::string &file,
                                   const std::string &where) {
  const std::string name = d.is_object() && d.contains("name") && d["name"].is_string()
                               ? d["name"].get<std::string>()
                               : std::string("?");
  reader r(name, where);
  r.only(d, "the declaration",
         {"name", "summary", "axes", "tensors", "passes", "eps", "tolerance", "reference"},
         {"name", "axes", "tensors", "passes", "reference"});
  operation_desc op;
  op.name = name;
  if (!is_identifier(op.name))
    r.fail("the name is not [a-z][a-z0-9_]* (at most 64 characters)");
  op.summary = d.contains("summary") ? r.str(d["summary"], "summary") : std::string();
  op.axes = r.axes(d["axes"]);
  if (!d["tensors"].is_array() || d["tensors"].empty() || d["tensors"].size() > max_tensors)
    r.fail(fmt::format("tensors must be a list of 1 to {} tensors", max_tensors));
  for (std::size_t i = 0; i < d["tensors"].size(); ++i) {
    tensor_desc t = r.tensor(d["tensors"][i], i, op.axes);
    if (op.index_of(t.name) >= 0)
      r.fail(fmt::format("two tensors are named {}", t.name));
    op.tensors.push_back(std::move(t));
  }
  r.check_roles(op);
  r.passes(d["passes"], op);
  op.eps = d.contains("eps") ? r.number(d["eps"], "eps") : 0.0;
  if (d.contains("tolerance"))
    r.tolerance(d["tolerance"], op);
  r.check_types(op);
  op.reference_name = r.str(d["reference"], "reference");
  if (op.reference_name.empty())
    r.fail("reference is empty");
  op.outside = true;
  op.file = file;
  return op;
}

std::string operation_digest(const json &descriptor) {
  return sha256_hex(canonical_json(descriptor));
}

const operation_desc &register_outside_operation(operation_desc op) {
  for (const auto &b : all_operations())
    if (b.name == op.name)
      throw invalid_input(fmt::format("operation {}: the name is a built-in operation's; name the "
                                      "file's operation otherwise",
                                      op.name),
                          op.file);
  op.outside = true;
  auto &table = outside_table();
  for (auto &o : table)
    if (o.name == op.name) {
      o = std::move(op);
      return o;
    }
  table.push_back(std::move(op));
  return table.back();
}

void set_outside_reference(std::string_view name,
                           void (*reference)(const operation_desc &, const shape &, pass_kind,
                                             host_tensors &)) {
  for (auto &o : outside_table())
    if (o.name == name)
      o.reference = reference;
}

void set_outside_device_reference(std::string_view name,
                                  device_values (*reference)(const operation_desc &, const shape &,
                                                             pass_kind,
                                                             const std::vector<device_input> &,
                                                             int)) {
  for (auto &o : outside_table())
    if (o.name == name)
      o.device_reference = reference;
}

const operation_desc *find_outside_operation(std::string_view name) {
  for (const auto &o : outside_table())
    if (o.name == name)
      return &o;
  return nullptr;
}

const operation_desc &outside_placeholder(std::string_view name) {
  static std::map<std::string, operation_desc, std::less<>> stand_ins;
  auto it = stand_ins.find(name);
  if (it == stand_ins.end()) {
    operation_desc op;
    op.name = std::string(name);
    op.axes = {"rows", "cols"};
    op.passes = {pass_kind::fwd, pass_kind::fwd_bwd};
    op.outside = true;
    it = stand_ins.emplace(op.name, std::move(op)).first;
  }
  return it->second;
}

json operation_record(const protocol &p, const operation_desc &op, const std::string &kept_file,
                      const std::string &sha256) {
  const json descriptor = operation_to_json(op);
  return {{"python", p.op_file},      {"name", p.op},
          {"file", kept_file},        {"sha256", sha256},
          {"descriptor", descriptor}, {"descriptor_sha256", operation_digest(descriptor)}};
}

std::filesystem::path recorded_operation_file(const json &freeze_record,
                                              const std::filesystem::path &project) {
  const std::filesystem::path kept(freeze_record.at("operation").value("file", ""));
  return kept.is_absolute() ? kept : (project / kept).lexically_normal();
}

const operation_desc *register_recorded_operation(const json &freeze_record,
                                                  const std::filesystem::path &project,
                                                  const std::string &where) {
  if (!freeze_record.is_object() || !freeze_record.contains("operation"))
    return nullptr;
  const json &rec = freeze_record["operation"];
  if (!rec.is_object() || !rec.contains("descriptor") || !rec.contains("file"))
    throw integrity_error("the freeze record's operation entry lacks its descriptor or file",
                          where);
  if (operation_digest(rec["descriptor"]) != rec.value("descriptor_sha256", ""))
    throw integrity_error("the freeze record's operation descriptor does not hash to its "
                          "descriptor_sha256",
                          where);
  return &register_outside_operation(operation_from_json(
      rec["descriptor"], recorded_operation_file(freeze_record, project).string(), where));
}

} // namespace prereg
