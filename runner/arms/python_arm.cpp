// Python arms (docs/python-arms.md): the Python runtime is loaded at run time (dlopen of the
// libpython that $PREREG_PYTHON, else `python3` on PATH, reports), so one static prereg binary
// runs Python arms with whatever Python, numpy and torch the machine has. Tensors reach Python
// as DLPack capsules of prereg's own buffers (numpy.from_dlpack on the CPU, torch.from_dlpack
// on CUDA with prereg's stream made current); the step is called directly from C++.
#include "arms/outside_arm.hpp"
#include "device/kernel_windows.hpp"

#include "prereg/error.hpp"
#include "spec/operation.hpp"
#include "spec/protocol.hpp"

#include "arms/outside_common.hpp"
#include "prereg/python_glue.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

namespace fs = std::filesystem;

namespace prereg {
namespace {

using namespace outside;

using PyObject = void;

/// The part of the CPython C API prereg uses, resolved from the loaded libpython (every one is
/// an exported function of CPython 3.8 and later).
struct python_api {
  void (*Py_InitializeEx)(int);
  int (*Py_IsInitialized)();
  PyObject *(*PyRun_StringFlags)(const char *, int, PyObject *, PyObject *, void *);
  PyObject *(*PyImport_AddModule)(const char *);
  PyObject *(*PyModule_GetDict)(PyObject *);
  PyObject *(*PyDict_GetItemString)(PyObject *, const char *);
  PyObject *(*PyObject_CallObject)(PyObject *, PyObject *);
  PyObject *(*PyTuple_New)(long);
  int (*PyTuple_SetItem)(PyObject *, long, PyObject *);
  PyObject *(*PyTuple_GetItem)(PyObject *, long);
  PyObject *(*PyLong_FromLongLong)(long long);
  PyObject *(*PyLong_FromVoidPtr)(void *);
  long long (*PyLong_AsLongLong)(PyObject *);
  PyObject *(*PyFloat_FromDouble)(double);
  PyObject *(*PyUnicode_FromString)(const char *);
  const char *(*PyUnicode_AsUTF8)(PyObject *);
  PyObject *(*PyDict_New)();
  int (*PyDict_SetItemString)(PyObject *, const char *, PyObject *);
  PyObject *(*PyErr_Occurred)();
  void (*PyErr_Fetch)(PyObject **, PyObject **, PyObject **);
  void (*PyErr_NormalizeException)(PyObject **, PyObject **, PyObject **);
  void (*PyErr_Clear)();
  void (*Py_DecRef)(PyObject *);
  void (*Py_IncRef)(PyObject *);
  PyObject *(*PyCapsule_New)(void *, const char *, void (*)(PyObject *));
  int (*PyCapsule_IsValid)(PyObject *, const char *);
  void *(*PyCapsule_GetPointer)(PyObject *, const char *);
  PyObject *none = nullptr; // _Py_NoneStruct
};

constexpr int py_file_input = 257;

// What `python3 -c` prints about itself: where its libpython is and its sys.path.
constexpr const char *probe_source =
    "import sys, sysconfig, json, os\n"
    "v = sysconfig.get_config_var\n"
    "print(json.dumps({'version': sys.version.split()[0], 'executable': sys.executable,"
    " 'prefix': sys.prefix, 'base_prefix': sys.base_prefix, 'exec_prefix': sys.exec_prefix,"
    " 'base_exec_prefix': sys.base_exec_prefix, 'path': sys.path,"
    " 'shared': v('Py_ENABLE_SHARED'), 'libdir': v('LIBDIR'), 'libpl': v('LIBPL'),"
    " 'multiarch': v('MULTIARCH'), 'ldlibrary': v('LDLIBRARY'), 'instsoname': v('INSTSONAME')}))\n";

std::string shell_quote(const std::string &s) {
  std::string out = "'";
  for (const char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class runtime {
public:
  static runtime &get() {
    static runtime r;
    return r;
  }

  void start() {
    if (m_started)
      return;
    if (!m_failure.empty())
      throw environment_error(m_failure);
    try {
      start_once();
    } catch (const error &e) {
      m_failure = e.what();
      throw;
    }
  }

  const python_api &api() const { return m_api; }
  PyObject *glue(const char *name) const {
    PyObject *f = m_api.PyDict_GetItemString(m_glue, name); // borrowed
    if (f == nullptr)
      throw io_error(fmt::format("prereg's Python glue has no {}", name));
    return f;
  }
  [[nodiscard]] bool started() const { return m_started; }
  [[nodiscard]] const json &probe() const { return m_probe; }
  [[nodiscard]] const std::string &library() const { return m_library; }

  /// The pending Python exception as one line (and clears it).
  std::string take_error() {
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    m_api.PyErr_Fetch(&type, &value, &tb);
    if (type == nullptr)
      return "unknown Python error";
    m_api.PyErr_NormalizeException(&type, &value, &tb);
    std::string out = "Python error";
    if (PyObject *args = m_api.PyTuple_New(1)) {
      m_api.Py_IncRef(value != nullptr ? value : m_api.none);
      m_api.PyTuple_SetItem(args, 0, value != nullptr ? value : m_api.none);
      if (PyObject *r = m_api.PyObject_CallObject(glue("describe"), args)) {
        if (const char *s = m_api.PyUnicode_AsUTF8(r))
          out = s;
        m_api.Py_DecRef(r);
      } else {
        m_api.PyErr_Clear();
      }
      m_api.Py_DecRef(args);
    }
    for (PyObject *o : {type, value, tb})
      if (o != nullptr)
        m_api.Py_DecRef(o);
    return escape_for_message(out);
  }

  /// Calls glue function `name` with `args` (a new tuple, consumed); throws on a Python error.
  PyObject *call(const char *name, PyObject *args) {
    PyObject *r = m_api.PyObject_CallObject(glue(name), args);
    if (args != nullptr)
      m_api.Py_DecRef(args);
    if (r == nullptr)
      throw io_error(take_error());
    return r;
  }

  PyObject *tuple(std::initializer_list<PyObject *> items) {
    PyObject *t = m_api.PyTuple_New(static_cast<long>(items.size()));
    long i = 0;
    for (PyObject *o : items)
      m_api.PyTuple_SetItem(t, i++, o); // steals
    return t;
  }
  PyObject *str(const std::string &s) { return m_api.PyUnicode_FromString(s.c_str()); }

private:
  void start_once() {
    const char *env = std::getenv("PREREG_PYTHON");
    const std::string python = env != nullptr && env[0] != '\0' ? env : "python3";
    const std::string where =
        env != nullptr && env[0] != '\0' ? "$PREREG_PYTHON" : "python3 on PATH";
    // 1. Ask the interpreter where its libpython is.
    const std::string cmd =
        fmt::format("{} -c {} 2>/dev/null", shell_quote(python), shell_quote(probe_source));
    std::string out;
    if (FILE *f = ::popen(cmd.c_str(), "r")) {
      std::array<char, 4096> buf{};
      std::size_t n = 0;
      while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0 && out.size() < (1u << 20))
        out.append(buf.data(), n);
      const int rc = ::pclose(f);
      if (rc != 0)
        out.clear();
    }
    if (out.empty())
      throw environment_error(fmt::format("no usable Python for Python arms: `{}` did not run "
                                          "(set PREREG_PYTHON to a python3 executable)",
                                          python),
                              where);
    try {
      m_probe = json::parse(out);
    } catch (const std::exception &) {
      throw environment_error(fmt::format("`{}` did not describe itself", python), where);
    }
    const auto str = [&](const char *k) {
      return m_probe.contains(k) && m_probe[k].is_string() ? m_probe[k].get<std::string>()
                                                           : std::string();
    };
    std::vector<fs::path> candidates;
    const std::vector<std::string> dirs{str("libdir"), str("libpl")};
    const std::vector<std::string> names{str("instsoname"), str("ldlibrary")};
    for (const std::string &dir : dirs)
      for (const std::string &name : names) {
        if (dir.empty() || name.empty() ||
            (!name.ends_with(".so") && name.find(".so.") == std::string::npos))
          continue;
        candidates.push_back(fs::path(dir) / name);
        if (!str("multiarch").empty())
          candidates.push_back(fs::path(dir) / str("multiarch") / name);
      }
    std::error_code ec;
    for (const auto &c : candidates)
      if (fs::exists(c, ec)) {
        m_library = c.string();
        break;
      }
    if (m_library.empty())
      throw environment_error(
          fmt::format("Python {} at {} has no shared libpython (built without --enable-shared?); "
                      "set PREREG_PYTHON to one that has, e.g. /usr/bin/python3",
                      str("version"), str("executable")),
          where);
    // 2. Load it, globally, so extension modules (numpy, torch) find its symbols.
    void *h = ::dlopen(m_library.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
      const char *why = ::dlerror();
      throw environment_error(
          fmt::format("cannot load {}: {}", m_library, why ? why : "dlopen failed"), where);
    }
    resolve(h);
    // 3. Start it with the interpreter's own prefix and sys.path (a virtual environment's
    // included); no signal handlers of its own: prereg's Ctrl-C handling stays.
    if (m_api.Py_IsInitialized() == 0) {
      const char *old_home = std::getenv("PYTHONHOME");
      const std::string saved = old_home != nullptr ? old_home : "";
      const std::string home =
          str("base_prefix") +
          (str("base_exec_prefix").empty() || str("base_exec_prefix") == str("base_prefix")
               ? std::string()
               : ":" + str("base_exec_prefix"));
      if (!home.empty())
        ::setenv("PYTHONHOME", home.c_str(), 1);
      m_api.Py_InitializeEx(0);
      if (old_home != nullptr)
        ::setenv("PYTHONHOME", saved.c_str(), 1);
      else
        ::unsetenv("PYTHONHOME");
    }
    PyObject *main = m_api.PyImport_AddModule("__prereg__"); // borrowed
    if (main == nullptr)
      throw environment_error("the embedded Python could not make a module", m_library);
    m_glue = m_api.PyModule_GetDict(main);
    const std::string setup = fmt::format("import sys, json\n"
                                          "_p = json.loads({})\n"
                                          "sys.path[:] = _p['path']\n"
                                          "sys.executable = _p['executable']\n"
                                          "sys._base_executable = _p['executable']\n"
                                          "sys.argv = ['prereg']\n",
                                          python_string(m_probe.dump()));
    run_code(setup, "sys.path");
    run_code(python_glue_source, "prereg's Python glue");
    m_started = true;
  }

  static std::string python_string(const std::string &s) {
    std::string out = "\"";
    for (const unsigned char c : s) {
      if (c == '\\' || c == '"')
        out += '\\';
      if (c < 0x20)
        out += fmt::format("\\x{:02x}", c);
      else
        out += static_cast<char>(c);
    }
    return out + "\"";
  }

  void run_code(const std::string &code, const char *what) {
    PyObject *r = m_api.PyRun_StringFlags(code.c_str(), py_file_input, m_glue, m_glue, nullptr);
    if (r == nullptr) {
      PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
      m_api.PyErr_Fetch(&type, &value, &tb);
      throw environment_error(fmt::format("the embedded Python failed to run {}", what), m_library);
    }
    m_api.Py_DecRef(r);
  }

  template <class F> void sym(void *h, F &f, const char *name) {
    void *p = ::dlsym(h, name);
    if (p == nullptr)
      throw environment_error(fmt::format("{} lacks the C API function {}", m_library, name),
                              m_library);
    std::memcpy(&f, &p, sizeof(f));
  }

  void resolve(void *h) {
#define PREREG_PY_SYM(n) sym(h, m_api.n, #n)
    PREREG_PY_SYM(Py_InitializeEx);
    PREREG_PY_SYM(Py_IsInitialized);
    PREREG_PY_SYM(PyRun_StringFlags);
    PREREG_PY_SYM(PyImport_AddModule);
    PREREG_PY_SYM(PyModule_GetDict);
    PREREG_PY_SYM(PyDict_GetItemString);
    PREREG_PY_SYM(PyObject_CallObject);
    PREREG_PY_SYM(PyTuple_New);
    PREREG_PY_SYM(PyTuple_SetItem);
    PREREG_PY_SYM(PyTuple_GetItem);
    PREREG_PY_SYM(PyLong_FromLongLong);
    PREREG_PY_SYM(PyLong_FromVoidPtr);
    PREREG_PY_SYM(PyLong_AsLongLong);
    PREREG_PY_SYM(PyFloat_FromDouble);
    PREREG_PY_SYM(PyUnicode_FromString);
    PREREG_PY_SYM(PyUnicode_AsUTF8);
    PREREG_PY_SYM(PyDict_New);
    PREREG_PY_SYM(PyDict_SetItemString);
    PREREG_PY_SYM(PyErr_Occurred);
    PREREG_PY_SYM(PyErr_Fetch);
    PREREG_PY_SYM(PyErr_NormalizeException);
    PREREG_PY_SYM(PyErr_Clear);
    PREREG_PY_SYM(Py_DecRef);
    PREREG_PY_SYM(Py_IncRef);
    PREREG_PY_SYM(PyCapsule_New);
    PREREG_PY_SYM(PyCapsule_IsValid);
    PREREG_PY_SYM(PyCapsule_GetPointer);
#undef PREREG_PY_SYM
    m_api.none = ::dlsym(h, "_Py_NoneStruct");
    if (m_api.none == nullptr)
      throw environment_error(fmt::format("{} lacks _Py_NoneStruct", m_library), m_library);
  }

  python_api m_api{};
  PyObject *m_glue = nullptr; // borrowed: the module's dict lives as long as the interpreter
  bool m_started = false;
  std::string m_failure;
  json m_probe;
  std::string m_library;
};

// --- DLPack capsules of prereg's buffers --------------------------------------------------------

struct managed_holder {
  DLManagedTensor managed{};
  std::vector<std::int64_t> shape;
};

void delete_managed(DLManagedTensor *m) { delete static_cast<managed_holder *>(m->manager_ctx); }

void capsule_destructor(PyObject *cap) {
  const python_api &api = runtime::get().api();
  if (api.PyCapsule_IsValid(cap, "dltensor") != 0) { // never consumed: ours to free
    auto *m = static_cast<DLManagedTensor *>(api.PyCapsule_GetPointer(cap, "dltensor"));
    if (m != nullptr && m->deleter != nullptr)
      m->deleter(m);
  }
}

// --- named regions (docs/python-arms.md, "Regions") -------------------------------------------

/// The region sums of one cell's timed windows, in window order (warm-up windows first: the
/// engine runs a cell's warm-up before its samples in either order).
struct region_log {
  cell_key key;
  std::vector<std::map<std::string, double>> windows; ///< label -> ms, one per closed window
  /// Per closed window: the labels of the regions the kernel clock's marks bracket, in entry
  /// order (empty without the clock).
  std::vector<std::vector<std::string>> orders;
  bool pending = false;  ///< a window opened and no instance of it has closed it yet
  bool poisoned = false; ///< a harvest failed: the windows no longer line up with the samples
};

std::vector<region_log> g_region_logs; // the measuring process is single-threaded

region_log &log_of(const cell_key &key) {
  for (auto &l : g_region_logs)
    if (l.key == key)
      return l;
  g_region_logs.push_back({key, {}, {}, false, false});
  return g_region_logs.back();
}

class python_instance final : public bound_arm_instance {
public:
  python_instance(PyObject *t, PyObject *step, PyObject *regions, std::string device, int ordinal,
                  crash_text step_crash, cell_key key)
      : m_t(t), m_step(step), m_regions(regions), m_device(std::move(device)), m_ordinal(ordinal),
        m_step_crash(std::move(step_crash)), m_key(std::move(key)) {}
  ~python_instance() override {
    auto &api = runtime::get().api();
    for (PyObject *o : {m_last, m_step, m_t, m_regions})
      if (o != nullptr)
        api.Py_DecRef(o);
  }
  void step(void *) override {
    auto &rt = runtime::get();
    crash_scope guard(m_step_crash);
    PyObject *r = rt.api().PyObject_CallObject(m_step, nullptr);
    if (m_last != nullptr)
      rt.api().Py_DecRef(m_last);
    m_last = r;
    if (r == nullptr)
      throw io_error(rt.take_error());
  }
  void collect() override {
    auto &rt = runtime::get();
    if (m_last == nullptr)
      return;
    rt.api().Py_IncRef(m_t);
    rt.api().Py_IncRef(m_last);
    rt.api().Py_DecRef(rt.call("collect", rt.tuple({m_t, m_last, rt.str(m_device)})));
  }
  void before_window() override {
    auto &rt = runtime::get();
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
  void after_window() override {
    auto &rt = runtime::get();
    if (m_device == "cuda") {
      PyObject *r = rt.call("window_peak", rt.tuple({rt.api().PyLong_FromLongLong(m_ordinal),
                                                     rt.api().PyLong_FromLongLong(m_base)}));
      const long long peak = rt.api().PyLong_AsLongLong(r);
      rt.api().Py_DecRef(r);
      m_peak = std::max<std::uint64_t>(m_peak, peak > 0 ? static_cast<std::uint64_t>(peak) : 0);
      m_measured = true;
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
  PyObject *m_t, *m_step, *m_regions;
  PyObject *m_last = nullptr;
  std::string m_device;
  int m_ordinal;
  crash_text m_step_crash;
  cell_key m_key;
  long long m_base = 0;
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
    auto &rt = runtime::get();
    const auto &api = rt.api();
    const std::string label = fmt::format("python {}:{}", m_file.string(), m_function);
    const crash_text crash = crash_message(m_id, label, "setup");
    crash_scope guard(crash);
    dl_set set(call);
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
    PyObject *meta = api.PyDict_New();
    const auto put = [&](const char *k, PyObject *v) {
      api.PyDict_SetItemString(meta, k, v);
      api.Py_DecRef(v);
    };
    put("rows", api.PyLong_FromLongLong(call.rows));
    put("cols", api.PyLong_FromLongLong(call.cols));
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
                                             cell_key{m_id, call.pass, call.rows, call.cols});
  }

  json environment() const override {
    return {{"kind", "python"},
            {"file", m_file.string()},
            {"sha256", m_sha},
            {"function", m_function},
            {"memory_billing",
             m_info.device == "cuda"
                 ? "torch's caching allocator: the largest torch.cuda.max_memory_allocated() "
                   "above the window's start, per timed sample"
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

} // namespace

std::shared_ptr<outside_arm> load_python_arm(const fs::path &file, const std::string &function,
                                             const protocol &p, const std::string &arm_id) {
  const std::string sha = outside_file_sha256(file, arm_id);
  auto &rt = runtime::get();
  rt.start();
  install_crash_guard();
  const crash_text crash = crash_message(arm_id, fmt::format("python {}", file.string()), "import");
  crash_scope guard(crash);
  PyObject *fn = nullptr;
  try {
    fn = rt.call("load", rt.tuple({rt.str(file.string()), rt.str(function),
                                   rt.str(fmt::format("prereg_arm_{}", g_module_counter++))}));
  } catch (const error &e) {
    throw invalid_input(fmt::format("arm {}: cannot load {} from the Python file: {}", arm_id,
                                    escape_for_message(function), e.what()),
                        file.string());
  }
  arm_info info = outside_info(fmt::format("{}:{}", file.filename().string(), function), p,
                               {dtype::fp32, dtype::fp16, dtype::bf16},
                               {pass_kind::fwd, pass_kind::fwd_bwd}, "python", sha, file);
  return std::make_shared<python_arm>(fn, std::move(info), arm_id, file, function, sha);
}

void attach_regions(raw_run &raw) {
  for (auto &cell : raw.cells) {
    std::vector<std::optional<std::vector<double>>> marks;
    marks.swap(cell.region_kernel_marks); // engine-internal: never leaves the process
    const auto it = std::find_if(g_region_logs.begin(), g_region_logs.end(),
                                 [&](const region_log &l) { return l.key == cell.key; });
    if (it == g_region_logs.end() || it->poisoned)
      continue;
    const std::size_t n = cell.samples_ms.size();
    if (it->windows.size() < n)
      continue; // cannot line up (not seen): no regions rather than wrong ones
    const std::size_t first = it->windows.size() - n; // the warm-up windows come first
    std::map<std::string, std::vector<double>> out;
    for (std::size_t i = 0; i < n; ++i)
      for (const auto &[label, ms] : it->windows[first + i])
        out[label].resize(n, 0.0);
    for (auto &[label, times] : out)
      for (std::size_t i = 0; i < n; ++i) {
        const auto &w = it->windows[first + i];
        const auto found = w.find(label);
        times[i] = found == w.end() ? 0.0 : found->second;
      }
    // The kernel clock's time per region: only when every sample's marks line up with the
    // labels the arm entered (docs/python-arms.md, "Regions").
    if (!out.empty() && marks.size() == n) { // orders has one entry per window, like windows
      std::map<std::string, std::vector<double>> kernels;
      for (const auto &[label, times] : out)
        kernels[label].assign(n, 0.0);
      bool lined_up = true;
      for (std::size_t i = 0; i < n && lined_up; ++i) { // lined_up: also left by the inner break
        const auto sums =
            marks[i] ? region_kernel_sums(it->orders[first + i], *marks[i]) : std::nullopt;
        if (!sums) {
          lined_up = false;
          break;
        }
        for (const auto &[label, ms] : *sums) {
          const auto k = kernels.find(label);
          if (k == kernels.end()) { // a region the events did not time (captured): no match
            lined_up = false;
            break;
          }
          k->second[i] = ms;
        }
      }
      if (lined_up)
        cell.region_kernels_ms = std::move(kernels);
    }
    cell.regions_ms = std::move(out);
  }
  g_region_logs.clear();
}

json python_environment() {
  auto &rt = runtime::get();
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
