// Outside operations (operation_file.hpp): the descriptor JSON both ways, validated strictly so
// that every malformed declaration is one line naming the operation, and the process's table.
#include "spec/operation_file.hpp"

#include "crypto/crypto.hpp"
#include "prereg/error.hpp"
#include "spec/op_formula.hpp"
#include "spec/protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

namespace prereg {
namespace {

constexpr std::size_t max_tensors = 64;
constexpr std::size_t max_axes = 8;

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
    t.dims = names(j["dims"], what + ".dims", max_axes);
    for (const auto &d : t.dims)
      if (std::find(axes.begin(), axes.end(), d) == axes.end())
        fail(fmt::format("tensor {} has dim '{}', which names no axis (axes: {})", t.name, d,
                         fmt::join(axes, ", ")));
    const std::string element =
        j.contains("element") ? str(j["element"], what + ".element") : "dtype";
    if (element != "dtype" && element != "fp32")
      fail(fmt::format("tensor {} has element '{}' (dtype: the protocol's; or fp32)", t.name,
                       element));
    t.element = element == "fp32" ? element_rule::fp32 : element_rule::protocol_dtype;
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
        fail(fmt::format("input {} lacks 'dist' (how it is drawn: {{lo, hi}})", t.name));
      t.dist = dist(j["dist"], t.name);
    } else if (j.contains("dist")) {
      fail(fmt::format("{} {} has 'dist'; only an input is drawn", role, t.name));
    }
    return t;
  }

  input_distribution dist(const json &j, const std::string &tensor) const {
    const std::string what = "dist of " + tensor;
    only(j, what, {"lo", "hi", "row_offset"}, {"lo", "hi"});
    input_distribution d;
    d.lo = number(j["lo"], what + ".lo");
    d.hi = number(j["hi"], what + ".hi");
    d.row_offset = j.contains("row_offset") ? number(j["row_offset"], what + ".row_offset") : 0.0;
    if (!(d.lo < d.hi) || d.row_offset < 0)
      fail(fmt::format("{} must have lo < hi and row_offset >= 0", what));
    return d;
  }

  void passes(const json &j, operation_desc &op) const {
    only(j, "passes", {"fwd", "fwd+bwd"}, {"fwd"});
    for (const auto &[key, value] : j.items()) {
      const pass_kind pass = key == "fwd" ? pass_kind::fwd : pass_kind::fwd_bwd;
      only(value, "passes." + key, {"bytes", "flops"}, {});
      op_pass_formulas f;
      f.pass = pass;
      const formula_env env{&op.axes, nullptr, 1};
      for (auto [k, target] : {std::pair{"bytes", &f.bytes}, std::pair{"flops", &f.flops}}) {
        if (!value.contains(k))
          continue;
        *target = str(value[k], fmt::format("passes.{}.{}", key, k));
        try {
          (void)eval_formula(*target, env, fmt::format("the {} formula of pass {}", k, key));
        } catch (const error &e) {
          fail(e.what());
        }
      }
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
    only(j, "tolerance", {"fp32", "fp16", "bf16"}, {});
    for (const auto &[key, value] : j.items()) {
      only(value, "tolerance." + key, {"rtol", "atol"}, {"rtol", "atol"});
      op_tolerance t;
      t.type = key == "fp32" ? dtype::fp32 : key == "fp16" ? dtype::fp16 : dtype::bf16;
      t.rtol = number(value["rtol"], "tolerance." + key + ".rtol");
      t.atol = number(value["atol"], "tolerance." + key + ".atol");
      if (t.rtol < 0 || t.atol < 0)
        fail(fmt::format("tolerance.{} must be 0 or more", key));
      op.tolerances.push_back(t);
    }
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

std::deque<operation_desc> &outside_table() {
  static std::deque<operation_desc> table; // a deque: registered descriptors never move
  return table;
}

} // namespace

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
              {"dims", t.dims},
              {"element", t.element == element_rule::fp32 ? "fp32" : "dtype"},
              {"passes", passes}};
    if (t.role == tensor_role::input)
      j["dist"] = {{"lo", t.dist.lo}, {"hi", t.dist.hi}, {"row_offset", t.dist.row_offset}};
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
