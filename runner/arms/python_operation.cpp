// Operation files in the embedded interpreter (python_operation.hpp).
#include "arms/python_operation.hpp"

#include "arms/outside_common.hpp"
#include "arms/python_runtime.hpp"
#include "prereg/error.hpp"
#include "spec/operation_file.hpp"
#include "spec/reference.hpp"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <set>

namespace prereg {
namespace {

using namespace outside;

/// The device each bound operation's reference is told (t.device).
std::map<std::string, std::string, std::less<>> &bound_devices() {
  static std::map<std::string, std::string, std::less<>> m;
  return m;
}

std::string text_at(const python_api &api, PyObject *tuple, long i) {
  const char *t = api.PyUnicode_AsUTF8(api.PyTuple_GetItem(tuple, i));
  return t != nullptr ? t : "?";
}

std::string cell_text(const shape &s, pass_kind pass) {
  std::string dims;
  for (const auto e : s.extents)
    dims += (dims.empty() ? "" : "x") + std::to_string(e);
  return fmt::format("{} {}", to_string(pass), dims);
}

/// The glue's description of one reference call: its shape and pass, the inputs' host
/// addresses (float64, in `t`; with `host_inputs` false, address 0: device_meta fills them) and
/// dims, the outputs' (`host_outputs`' buffers, sized here; with none, address 0: they stay on
/// the device) and the outputs' names in descriptor order.
json reference_meta(const operation_desc &op, const shape &s, pass_kind pass, const host_tensors &t,
                    host_tensors *host_outputs, bool host_inputs = true) {
  json meta = {{"rows", 0},
               {"cols", 0},
               {"eps", op.eps},
               {"pass", std::string(to_string(pass))},
               {"inputs", json::object()},
               {"outputs", json::object()},
               {"order", json::array()},
               {"absent", json::array()},
               {"axes", json::object()},
               {"kinds", json::object()}};
  const auto it = bound_devices().find(op.name);
  meta["device"] = it == bound_devices().end() ? std::string("cpu") : it->second;
  for (std::size_t a = 0; a < op.axes.size(); ++a)
    meta["axes"][op.axes[a]] = s.extents.at(a);
  if (op.axis_of("rows") >= 0 && op.axis_of("cols") >= 0) {
    meta["rows"] = s.extents.at(static_cast<std::size_t>(op.axis_of("rows")));
    meta["cols"] = s.extents.at(static_cast<std::size_t>(op.axis_of("cols")));
  }
  for (std::size_t i = 0; i < op.tensors.size(); ++i) {
    const tensor_desc &d = op.tensors[i];
    if (!op.used_in(i, pass)) {
      meta["absent"].push_back(d.name);
      continue;
    }
    if (const dtype et = d.type(dtype::fp32); is_integral(et)) {
      // [type, least, largest]: an output's values exclude the poison (reference.hpp).
      auto [least, most] = reference::integer_limits(et);
      if (d.role != tensor_role::input && et == dtype::uint8)
        most -= 1; // 255 is the poison
      else if (d.role != tensor_role::input && (et == dtype::int8 || et == dtype::int32))
        least += 1; // the type's least is the poison
      meta["kinds"][d.name] = {std::string(to_string(et)), least, most};
    }
    json dims = json::array();
    for (const auto &ax : d.dims)
      dims.push_back(s.extents.at(static_cast<std::size_t>(op.axis_of(ax))));
    const auto n = static_cast<std::size_t>(op.elements(i, s));
    if (d.role == tensor_role::input) {
      if (host_inputs && t.at(i).size() != n)
        throw invalid_input(fmt::format("operation {}: input {} has {} values, not {}", op.name,
                                        d.name, t.at(i).size(), n));
    } else {
      meta["order"].push_back(d.name);
      if (host_outputs != nullptr)
        host_outputs->at(i).assign(n, 0.0);
    }
    const bool host = (d.role == tensor_role::input && host_inputs) || host_outputs != nullptr;
    const auto addr = host ? reinterpret_cast<std::uintptr_t>(t[i].data()) : 0;
    meta[d.role == tensor_role::input ? "inputs" : "outputs"][d.name] = {addr, dims};
  }
  return meta;
}

/// reference_meta for a call on the device: each input's device address, dims and element type
/// (`where`: "device"; the glue reads them there), the outputs' dims (address 0: they stay on the
/// device).
json device_meta(const operation_desc &op, const shape &s, pass_kind pass,
                 const std::vector<device_input> &inputs) {
  const host_tensors none(op.tensors.size());
  json meta = reference_meta(op, s, pass, none, nullptr, false);
  meta["where"] = "device";
  for (std::size_t i = 0; i < op.tensors.size(); ++i) {
    const tensor_desc &d = op.tensors[i];
    if (d.role != tensor_role::input || !op.used_in(i, pass))
      continue;
    json &in = meta["inputs"][d.name];
    in[0] = reinterpret_cast<std::uintptr_t>(inputs.at(i).at);
    in.push_back(std::string(to_string(inputs.at(i).type)));
  }
  return meta;
}

/// The glue's answer `text` ("" or why not) as the reference's failure at this cell.
void throw_unless_empty(const operation_desc &op, const shape &s, pass_kind pass,
                        const std::string &text) {
  if (!text.empty())
    throw invalid_input(fmt::format("operation {}: the reference at {} {}", op.name,
                                    cell_text(s, pass), escape_for_message(text)),
                        op.file);
}

/// One call of the reference: the inputs in, the pass's outputs (and saved tensors) out.
void call_reference(const operation_desc &op, const shape &s, pass_kind pass, host_tensors &t) {
  const json meta = reference_meta(op, s, pass, t, &t);
  auto &rt = python_runtime::get();
  PyObject *r = nullptr;
  try {
    r = rt.call("operation_reference",
                rt.tuple({rt.str(op.file), rt.str(op.name), rt.str(meta.dump())}));
  } catch (const error &e) {
    throw invalid_input(fmt::format("operation {}: the reference at {} failed: {}", op.name,
                                    cell_text(s, pass), e.what()),
                        op.file);
  }
  const char *why = rt.api().PyUnicode_AsUTF8(r);
  const std::string text = why != nullptr ? why : "returned no text";
  rt.api().Py_DecRef(r);
  throw_unless_empty(op, s, pass, text);
}

/// Whether this is the first call of the operation's reference at this pass and shape (which
/// then runs twice and must agree with itself bit for bit).
std::set<std::tuple<std::string, pass_kind, std::vector<std::int64_t>>> &seen_calls() {
  static std::set<std::tuple<std::string, pass_kind, std::vector<std::int64_t>>> seen;
  return seen;
}
bool first_call(const operation_desc &op, const shape &s, pass_kind pass) {
  return seen_calls().emplace(op.name, pass, s.extents).second;
}

/// The reference every bound outside operation runs: the first call of a pass and shape runs
/// twice and must agree with itself bit for bit.
void python_reference(const operation_desc &op, const shape &s, pass_kind pass, host_tensors &t) {
  call_reference(op, s, pass, t);
  if (!first_call(op, s, pass))
    return;
  host_tensors again = t;
  call_reference(op, s, pass, again);
  for (std::size_t i = 0; i < op.tensors.size(); ++i) {
    if (op.tensors[i].role == tensor_role::input || t[i].size() != again[i].size())
      continue;
    for (std::size_t k = 0; k < t[i].size(); ++k)
      if (std::memcmp(&t[i][k], &again[i][k], sizeof(double)) != 0)
        throw invalid_input(
            fmt::format("operation {}: the reference at {} disagrees with itself across two "
                        "calls: {} element {} is {:.17g}, then {:.17g}",
                        op.name, cell_text(s, pass), op.tensors[i].name, k, t[i][k], again[i][k]),
            op.file);
  }
}

/// The glue's outputs of one device reference call, released when the last holder goes.
struct held_outputs {
  long long handle = 0;
  held_outputs() = default;
  held_outputs(const held_outputs &) = delete;
  held_outputs &operator=(const held_outputs &) = delete;
  ~held_outputs() {
    try {
      auto &rt = python_runtime::get();
      rt.api().Py_DecRef(
          rt.call("operation_reference_release", rt.tuple({rt.api().PyLong_FromLongLong(handle)})));
    } catch (...) { // nothing to do: the tensors stay with the interpreter
    }
  }
};

/// The reference on the device (docs/operations.md, "The reference"): its outputs stay there
/// as the glue's float64 tensors; the first call of a pass and shape runs twice and must agree
/// bit for bit (compared on the device). Nothing (no addresses, the hook unbound) where torch
/// with CUDA is not importable: the host's path serves.
device_values python_device_reference(const operation_desc &op, const shape &s, pass_kind pass,
                                      const std::vector<device_input> &inputs, int ordinal) {
  json meta = device_meta(op, s, pass, inputs);
  meta["ordinal"] = ordinal;
  const bool twice = first_call(op, s, pass);
  meta["twice"] = twice;
  auto &rt = python_runtime::get();
  PyObject *r = nullptr;
  try {
    r = rt.call("operation_reference_device",
                rt.tuple({rt.str(op.file), rt.str(op.name), rt.str(meta.dump())}));
  } catch (const error &e) {
    throw invalid_input(fmt::format("operation {}: the reference at {} failed: {}", op.name,
                                    cell_text(s, pass), e.what()),
                        op.file);
  }
  const std::string text = text_at(rt.api(), r, 0);
  auto held = std::make_shared<held_outputs>();
  held->handle = rt.api().PyLong_AsLongLong(rt.api().PyTuple_GetItem(r, 1));
  const std::string addresses = text_at(rt.api(), r, 2);
  rt.api().Py_DecRef(r);
  if (held->handle < 0) { // no torch with CUDA here: the host's path from now on
    if (twice)
      seen_calls().erase({op.name, pass, s.extents}); // its first call is still to come
    set_outside_device_reference(op.name, nullptr);
    return {};
  }
  throw_unless_empty(op, s, pass, text);
  const json at = parse_json_strict(addresses, op.file);
  device_values v;
  v.at.assign(op.tensors.size(), nullptr);
  for (std::size_t i = 0; i < op.tensors.size(); ++i)
    if (op.tensors[i].role != tensor_role::input && op.used_in(i, pass))
      v.at[i] = reinterpret_cast<const double *>(
          static_cast<std::uintptr_t>(std::stoull(at.at(op.tensors[i].name).get<std::string>())));
  v.owner = std::move(held);
  return v;
}

} // namespace

json describe_python_operation(const std::filesystem::path &file, const std::string &name) {
  auto &rt = python_runtime::get();
  rt.start();
  PyObject *r = rt.call("operation_describe", rt.tuple({rt.str(file.string()), rt.str(name)}));
  const std::string kind = text_at(rt.api(), r, 0);
  const std::string text = text_at(rt.api(), r, 1);
  rt.api().Py_DecRef(r);
  if (kind == "environment")
    throw environment_error(fmt::format("operation {}: cannot load the operation file with {}: "
                                        "{}; {}",
                                        name, rt.interpreter(), escape_for_message(text),
                                        choose_python_advice),
                            file.string());
  if (kind != "ok")
    throw invalid_input(fmt::format("operation {}: {}", name, escape_for_message(text)),
                        file.string());
  try {
    return parse_json_strict(text, file.string());
  } catch (const error &e) {
    throw invalid_input(
        fmt::format("operation {}: the declaration does not read as JSON: {}", name, e.what()),
        file.string());
  }
}

void bind_python_reference(const operation_desc &op, const std::string &device) {
  if (!op.outside || op.reference != nullptr)
    return;
  python_runtime::get().start();
  // The file is the pinned one (run checked its SHA-256); its declaration, read again here, must
  // still be the descriptor the run measures by (a declaration that reads the environment).
  const json now = operation_to_json(
      operation_from_json(describe_python_operation(op.file, op.name), op.file, op.file));
  if (now != operation_to_json(op))
    throw invalid_input(fmt::format("operation {}: the file's declaration, read in the measuring "
                                    "process, differs from the descriptor frozen with it",
                                    op.name),
                        op.file);
  bound_devices()[op.name] = device;
  set_outside_reference(op.name, python_reference);
  if (device == "cuda") // the torch reference's outputs stay on the device (docs/engine.md)
    set_outside_device_reference(op.name, python_device_reference);
}

} // namespace prereg
