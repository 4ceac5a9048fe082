// Python arms (docs/python-arms.md): a function of a Python file, called in the embedded
// interpreter (python_runtime.hpp). Tensors reach Python as DLPack capsules of prereg's own
// buffers (numpy.from_dlpack on the CPU, torch.from_dlpack on CUDA with prereg's stream made
// current); the step is called directly from C++.
#include "arms/outside_arm.hpp"

#include "arms/outside_common.hpp"
#include "arms/python_regions.hpp"
#include "arms/python_runtime.hpp"
#include "base/suggest.hpp"
#include "prereg/error.hpp"
#include "spec/operation.hpp"
#include "spec/protocol.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <memory>

namespace fs = std::filesystem;

namespace prereg {
namespace {

using namespace outside;

// --- DLPack capsules of prereg's buffers ------------------------------------------------------

struct managed_holder {
  DLManagedTensor managed{};
  std::vector<std::int64_t> shape;
};

void delete_managed(DLManagedTensor *m) { delete static_cast<managed_holder *>(m->manager_ctx); }

void capsule_destructor(PyObject *cap) {
  const python_api &api = python_runtime::get().api();
  if (api.PyCapsule_IsValid(cap, "dltensor") != 0) { // never consumed: ours to free
    auto *m = static_cast<DLManagedTensor *>(api.PyCapsule_GetPointer(cap, "dltensor"));
    if (m != nullptr && m->deleter != nullptr)
      m->deleter(m);
  }
}

/// A dict of tensor name -> a DLPack capsule of its buffer (None where the pass uses none).
PyObject *capsules(const python_api &api, const dl_set &set) {
  PyObject *caps = api.PyDict_New();
  for (std::size_t i = 0; i < set.tensors.size(); ++i) {
    if (set.tensors[i].data == nullptr) {
      api.Py_IncRef(api.none);
      api.PyDict_SetItemString(caps, set.names[i], api.none);
      continue;
    }
    auto *h = new managed_holder;
    h->shape = set.shapes[i];
    h->managed.dl_tensor = set.tensors[i];
    h->managed.dl_tensor.shape = h->shape.data();
    h->managed.manager_ctx = h;
    h->managed.deleter = delete_managed;
    PyObject *cap = api.PyCapsule_New(&h->managed, "dltensor", capsule_destructor);
    api.PyDict_SetItemString(caps, set.names[i], cap);
    api.Py_DecRef(cap);
  }
  return caps;
}

/// The numpy / torch type name a uint8 capsule of `type` is viewed as ("" for the others).
std::string_view python_view(dtype type) {
  switch (type) {
  case dtype::boolean:
    return "bool";
  case dtype::fp8_e4m3:
    return "float8_e4m3fn";
  case dtype::fp8_e5m2:
    return "float8_e5m2";
  default:
    return "";
  }
}

/// The call's facts for the arm's `t` (rows, cols, dtype, eps, pass_, device, operation,
/// options), as a dict.
PyObject *call_meta(python_runtime &rt, const outside_call &call) {
  const python_api &api = rt.api();
  PyObject *meta = api.PyDict_New();
  const auto put = [&](const char *k, PyObject *v) {
    api.PyDict_SetItemString(meta, k, v);
    api.Py_DecRef(v);
  };
  put("rows", api.PyLong_FromLongLong(call.rows));
  put("cols", api.PyLong_FromLongLong(call.cols));
  PyObject *axes = api.PyDict_New();
  for (std::size_t a = 0; a < call.op->axes.size() && a < call.extents.extents.size(); ++a) {
    PyObject *v = api.PyLong_FromLongLong(call.extents.extents[a]);
    api.PyDict_SetItemString(axes, call.op->axes[a].c_str(), v);
    api.Py_DecRef(v);
  }
  put("axes", axes);
  put("dtype", rt.str(std::string(to_string(call.type))));
  put("eps", api.PyFloat_FromDouble(call.eps));
  put("pass_", rt.str(std::string(to_string(call.pass))));
  put("device", rt.str(call.device));
  put("operation", rt.str(call.op->name));
  PyObject *opts = api.PyDict_New();
  for (const auto &[name, value] : call.options) {
    PyObject *v = api.PyFloat_FromDouble(value);
    api.PyDict_SetItemString(opts, name.c_str(), v);
    api.Py_DecRef(v);
  }
  put("options", opts);
  // bool and fp8 tensors come as uint8 capsules (capsule_type): the glue views them as these.
  PyObject *views = api.PyDict_New();
  for (const auto &d : call.op->tensors)
    if (const std::string_view v = python_view(d.type(call.type)); !v.empty()) {
      PyObject *s = rt.str(std::string(v));
      api.PyDict_SetItemString(views, d.name.c_str(), s);
      api.Py_DecRef(s);
    }
  put("views", views);
  return meta;
}

class python_instance final : public bound_arm_instance {
public:
  python_instance(PyObject *t, PyObject *step, PyObject *regions, std::string device, int ordinal,
                  crash_text step_crash, cell_key key)
      : m_t(t), m_step(step), m_regions(regions), m_device(std::move(device)), m_ordinal(ordinal),
        m_step_crash(std::move(step_crash)), m_key(std::move(key)) {}
  ~python_instance() override {
    auto &api = python_runtime::get().api();
    for (PyObject *o : {m_last, m_step, m_t, m_regions})
      if (o != nullptr)
        api.Py_DecRef(o);
  }
  /// One call of the step; its outputs are checked as it returns, inside the window (only
  /// exact numpy arrays and torch tensors: nothing is left to compute when they are copied).
  void step(void *) override {
    auto &rt = python_runtime::get();
    crash_scope guard(m_step_crash);
    PyObject *r = rt.api().PyObject_CallObject(m_step, nullptr);
    if (m_last != nullptr)
      rt.api().Py_DecRef(m_last);
    m_last = nullptr;
    if (r == nullptr)
      throw io_error(rt.take_error());
    if (r == rt.api().none) { // written in place: nothing to check
      m_last = r;
      return;
    }
    m_last =
        rt.call("outputs", rt.tuple({r, rt.api().PyLong_FromLongLong(m_device == "cuda" ? 1 : 0)}));
  }
  void collect() override {
    auto &rt = python_runtime::get();
    if (m_last == nullptr)
      return;
    rt.api().Py_IncRef(m_t);
    rt.api().Py_IncRef(m_last);
    rt.api().Py_DecRef(rt.call("collect", rt.tuple({m_t, m_last, rt.str(m_device)})));
  }
  void before_window() override {
    auto &rt = python_runtime::get();
    log_of(m_key).pending = true;
    rt.api().Py_IncRef(m_regions);
    if (m_device != "cuda") {
      rt.api().Py_DecRef(rt.call("regions_reset", rt.tuple({m_regions})));
      return;
    }
    PyObject *r =
        rt.call("window_open", rt.tuple({rt.api().PyLong_FromLongLong(m_ordinal), m_regions}));
    m_base = rt.api().PyLong_AsLongLong(r);
    rt.api().Py_DecRef(r);
  }
  void before_capture() override {
    if (m_device != "cuda")
      return;
    auto &rt = python_runtime::get();
    PyObject *r = rt.call("capture_open", rt.tuple({rt.api().PyLong_FromLongLong(m_ordinal)}));
    m_capture_base = rt.api().PyLong_AsLongLong(r);
    rt.api().Py_DecRef(r);
  }
  void after_capture() override {
    if (m_device == "cuda")
      take_peak(m_capture_base);
  }
  void after_window() override {
    auto &rt = python_runtime::get();
    if (m_device == "cuda") {
      take_peak(m_base);
    }
    region_log &log = log_of(m_key);
    std::map<std::string, double> sums;
    std::vector<std::string> order;
    try {
      rt.api().Py_IncRef(m_regions);
      PyObject *r = rt.call("regions_take", rt.tuple({m_regions}));
      if (r != rt.api().none) {
        const char *text = rt.api().PyUnicode_AsUTF8(r);
        const json j = json::parse(text != nullptr ? text : "{}");
        for (const auto &[label, ms] : j.at("ms").items())
          sums[label] = ms.get<double>();
        for (const auto &label : j.at("order"))
          order.push_back(label.get<std::string>());
      }
      rt.api().Py_DecRef(r);
    } catch (const std::exception &e) {
      log.poisoned = true;
      throw io_error(fmt::format("the step's regions could not be read: {}", e.what()));
    }
    if (log.pending) { // the first instance of this window to close it
      log.windows.emplace_back();
      log.orders.emplace_back();
      log.pending = false;
    }
    if (log.windows.empty())
      return;
    for (const auto &[label, ms] : sums)
      log.windows.back()[label] += ms;
    // Instances close a window in the order they stepped in it: their marks ran in this order.
    log.orders.back().insert(log.orders.back().end(), order.begin(), order.end());
  }
  std::optional<std::uint64_t> own_peak_bytes() override {
    if (!m_measured)
      return std::nullopt;
    return m_peak;
  }

private:
  /// torch's peak allocation above `base` since its statistics were reset, into the arm's peak.
  void take_peak(long long base) {
    auto &rt = python_runtime::get();
    PyObject *r = rt.call("window_peak", rt.tuple({rt.api().PyLong_FromLongLong(m_ordinal),
                                                   rt.api().PyLong_FromLongLong(base)}));
    const long long peak = rt.api().PyLong_AsLongLong(r);
    rt.api().Py_DecRef(r);
    m_peak = std::max<std::uint64_t>(m_peak, peak > 0 ? static_cast<std::uint64_t>(peak) : 0);
    m_measured = true;
  }

  PyObject *m_t, *m_step, *m_regions;
  PyObject *m_last = nullptr;
  std::string m_device;
  int m_ordinal;
  crash_text m_step_crash;
  cell_key m_key;
  long long m_base = 0;
  long long m_capture_base = 0;
  std::uint64_t m_peak = 0;
  bool m_measured = false;
};

class python_arm final : public outside_arm {
public:
  python_arm(PyObject *fn, arm_info info, std::string arm_id, fs::path file, std::string function,
             std::string sha)
      : m_fn(fn), m_info(std::move(info)), m_id(std::move(arm_id)), m_file(std::move(file)),
        m_function(std::move(function)), m_sha(std::move(sha)) {}
  const arm_info &info() const override { return m_info; }

  std::unique_ptr<bound_arm_instance> bind(const outside_call &call) override {
    auto &rt = python_runtime::get();
    const auto &api = rt.api();
    const std::string label = fmt::format("python {}:{}", m_file.string(), m_function);
    const crash_text crash = crash_message(m_id, label, "setup");
    crash_scope guard(crash);
    dl_set set(call, true);
    PyObject *caps = capsules(api, set);
    PyObject *meta = call_meta(rt, call);
    api.Py_IncRef(m_fn);
    PyObject *r;
    try {
      r = rt.call("bind",
                  rt.tuple({m_fn, meta, caps, rt.str(call.device),
                            api.PyLong_FromLongLong(call.device_ordinal),
                            api.PyLong_FromVoidPtr(call.stream),
                            api.PyLong_FromVoidPtr(reinterpret_cast<void *>(call.region_mark))}));
    } catch (const error &e) {
      throw io_error(fmt::format("setup ({}(t)) raised: {}", m_function, e.what()));
    }
    // r is (t, step, regions): keep all three
    PyObject *tt = api.PyTuple_GetItem(r, 0); // borrowed
    PyObject *step = api.PyTuple_GetItem(r, 1);
    PyObject *regions = api.PyTuple_GetItem(r, 2);
    api.Py_IncRef(tt);
    api.Py_IncRef(step);
    api.Py_IncRef(regions);
    api.Py_DecRef(r);
    return std::make_unique<python_instance>(tt, step, regions, call.device, call.device_ordinal,
                                             crash_message(m_id, label, "step"),
                                             key_of(m_id, call.pass, *call.op, call.extents));
  }

  json environment() const override {
    return {{"kind", "python"},
            {"file", m_file.string()},
            {"sha256", m_sha},
            {"function", m_function},
            {"memory_billing",
             m_info.device == "cuda"
                 ? "torch's caching allocator: the largest torch.cuda.max_memory_allocated() "
                   "above the window's start, per timed sample, and (launch: graph) above the "
                   "capture's start while the step is captured"
                 : "not measured (host allocations of a Python arm are not tracked)"}};
  }

private:
  PyObject *m_fn;
  arm_info m_info;
  std::string m_id;
  fs::path m_file;
  std::string m_function;
  std::string m_sha;
};

int g_module_counter = 0;

/// Refuses (exit 5, the environment) a Python arm of an operation with fp8 tensors where this
/// interpreter has no type to view them as (numpy without ml_dtypes; a torch without fp8).
void check_element_support(python_runtime &rt, const protocol &p, const std::string &arm_id,
                           const fs::path &file) {
  const operation_desc *op = find_operation(p.op);
  if (op == nullptr)
    return;
  json kinds = json::array();
  for (const auto &t : op->tensors)
    if (const std::string_view v = python_view(t.type(p.type)); v.starts_with("float8")) {
      if (std::find(kinds.begin(), kinds.end(), v) == kinds.end())
        kinds.push_back(std::string(v));
    }
  if (kinds.empty())
    return;
  PyObject *r = rt.call("element_support", rt.tuple({rt.str(p.device), rt.str(kinds.dump())}));
  const char *text = rt.api().PyUnicode_AsUTF8(r);
  const std::string why = escape_for_message(text != nullptr ? text : "");
  rt.api().Py_DecRef(r);
  if (!why.empty())
    throw environment_error(fmt::format("arm {}: operation {} has fp8 tensors, which {} cannot "
                                        "give a Python arm: {}",
                                        arm_id, op->name, rt.interpreter(), why),
                            file.string());
}

/// glue.load's answer (kind, text or function, JSON list of the file's functions), checked:
/// the function (a new reference), or the refusal its kind calls for.
PyObject *loaded_function(python_runtime &rt, PyObject *r, const fs::path &file,
                          const std::string &function, const std::string &arm_id,
                          const std::string &device_missing) {
  const python_api &api = rt.api();
  const auto text_of = [&](long i) {
    const char *t = api.PyUnicode_AsUTF8(api.PyTuple_GetItem(r, i));
    return escape_for_message(t != nullptr ? t : "?");
  };
  const std::string kind = text_of(0);
  if (kind == "ok") {
    PyObject *fn = api.PyTuple_GetItem(r, 1); // borrowed
    api.Py_IncRef(fn);
    api.Py_DecRef(r);
    return fn;
  }
  const std::string text = kind == "missing" ? std::string() : text_of(1);
  const std::string names_json = text_of(2);
  api.Py_DecRef(r);
  const std::string fn = escape_for_message(function);
  if (kind == "environment")
    throw environment_error(
        fmt::format("arm {}: cannot load {} from the Python file with {}: {}; {}", arm_id, fn,
                    rt.interpreter(), text, choose_python_advice),
        file.string());
  if (kind == "device")
    throw environment_error(fmt::format("arm {}: cannot load {} from the Python file: {} ({})",
                                        arm_id, fn, text, device_missing),
                            file.string());
  if (kind != "missing")
    throw invalid_input(
        fmt::format("arm {}: cannot load {} from the Python file: {}", arm_id, fn, text),
        file.string());
  std::vector<std::string> names;
  for (const auto &n : json::parse(names_json))
    names.push_back(escape_for_message(n.get<std::string>()));
  const std::string defines = names.empty() ? "it defines no function"
                                            : fmt::format("it defines {}{}", fmt::join(names, ", "),
                                                          did_you_mean(function, names));
  throw invalid_input(fmt::format("arm {}: {} has no function {} ({})", arm_id,
                                  escape_for_message(file.filename().string()), fn, defines),
                      file.string());
}

} // namespace

std::shared_ptr<outside_arm> load_python_arm(const fs::path &file, const std::string &function,
                                             const protocol &p, const std::string &arm_id,
                                             const std::string &device_missing) {
  const std::string sha = outside_file_sha256(file, arm_id);
  auto &rt = python_runtime::get();
  rt.start();
  install_crash_guard();
  const crash_text crash = crash_message(arm_id, fmt::format("python {}", file.string()), "import");
  crash_scope guard(crash);
  PyObject *r = nullptr;
  try {
    r = rt.call("load", rt.tuple({rt.str(file.string()), rt.str(function),
                                  rt.str(fmt::format("prereg_arm_{}", g_module_counter++)),
                                  rt.api().PyLong_FromLongLong(device_missing.empty() ? 0 : 1)}));
  } catch (const error &e) { // the glue itself raised
    throw invalid_input(fmt::format("arm {}: cannot load {} from the Python file: {}", arm_id,
                                    escape_for_message(function), e.what()),
                        file.string());
  }
  PyObject *fn = loaded_function(rt, r, file, function, arm_id, device_missing);
  check_element_support(rt, p, arm_id, file);
  arm_info info = outside_info(fmt::format("{}:{}", file.filename().string(), function), p,
                               {dtype::fp32, dtype::fp16, dtype::bf16},
                               {pass_kind::fwd, pass_kind::fwd_bwd}, "python", sha, file);
  return std::make_shared<python_arm>(fn, std::move(info), arm_id, file, function, sha);
}

std::string python_interpreter() { return python_runtime::get().interpreter(); }

json python_environment() {
  auto &rt = python_runtime::get();
  if (!rt.started())
    return nullptr;
  json out = {{"libpython", rt.library()}};
  try {
    PyObject *s = rt.call("versions_json", nullptr);
    if (const char *text = rt.api().PyUnicode_AsUTF8(s))
      out.update(json::parse(text));
    rt.api().Py_DecRef(s);
  } catch (const std::exception &e) {
    out["error"] = e.what();
  }
  return out;
}

} // namespace prereg
