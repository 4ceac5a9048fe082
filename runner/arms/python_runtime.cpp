// The embedded CPython interpreter (python_runtime.hpp): found, loaded, started, and called.
#include "arms/python_runtime.hpp"

#include "arms/outside_common.hpp"
#include "prereg/error.hpp"
#include "prereg/python_glue.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

namespace fs = std::filesystem;

namespace prereg::outside {
namespace {

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

std::string python_string(const std::string &s) {
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

/// The probe's string `k`, or "" when it has none.
std::string probe_text(const json &probe, const char *k) {
  return probe.contains(k) && probe[k].is_string() ? probe[k].get<std::string>() : std::string();
}

/// `name` as PATH finds it (a name with a slash: itself), or "" when there is no such
/// executable.
std::string on_path(const std::string &name) {
  if (name.find('/') != std::string::npos)
    return ::access(name.c_str(), X_OK) == 0 ? name : std::string();
  const char *path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate =
        fs::path(start == end ? "." : dirs.substr(start, end - start)) / name;
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
    start = end + 1;
  }
  return "";
}

/// 1. Asks the interpreter `python` where its libpython is (its probe_source output).
json describe_python(const std::string &python, const std::string &where) {
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
  const std::string found = on_path(python);
  const std::string named =
      found.empty() || found == python ? python : fmt::format("{} = {}", python, found);
  if (out.empty())
    throw environment_error(fmt::format("no usable Python for Python arms: `{}` did not run{}; {}",
                                        named, found.empty() ? " (not found)" : "",
                                        choose_python_advice),
                            where);
  try {
    return json::parse(out);
  } catch (const std::exception &) {
    throw environment_error(
        fmt::format("`{}` did not describe itself; {}", named, choose_python_advice), where);
  }
}

/// The shared libpython the probe names: the first of its library directories x names that
/// exists (also under the multiarch directory); throws when there is none.
std::string find_libpython(const json &probe, const std::string &where) {
  const auto str = [&](const char *k) { return probe_text(probe, k); };
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
    if (fs::exists(c, ec))
      return c.string();
  throw environment_error(
      fmt::format("Python {} at {} has no shared libpython (built without --enable-shared?); "
                  "choose one that has with PREREG_PYTHON=/path/to/python3, e.g. /usr/bin/python3",
                  str("version"), str("executable")),
      where);
}

} // namespace

const char *const choose_python_advice =
    "choose another interpreter with PREREG_PYTHON=/path/to/python3";

python_runtime &python_runtime::get() {
  static python_runtime r;
  return r;
}

void python_runtime::start() {
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

std::string python_runtime::interpreter() const {
  if (m_probe.is_null())
    return {};
  return fmt::format("Python {} at {} ({})", probe_text(m_probe, "version"),
                     probe_text(m_probe, "executable"), m_where);
}

void python_runtime::start_once() {
  const char *env = std::getenv("PREREG_PYTHON");
  const bool chosen = env != nullptr && env[0] != '\0';
  const std::string python = chosen ? env : "python3";
  const std::string where = chosen ? fmt::format("PREREG_PYTHON={}", python) : "python3 on PATH";
  m_where = where;
  m_probe = describe_python(python, where);
  m_library = find_libpython(m_probe, where);
  load_library(where);
  initialize();
  install_glue();
  m_started = true;
}

/// 2. Loads libpython, globally, so extension modules (numpy, torch) find its symbols.
void python_runtime::load_library(const std::string &where) {
  void *h = ::dlopen(m_library.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    const char *why = ::dlerror();
    throw environment_error(fmt::format("cannot load {}, the libpython of {}: {}; {}", m_library,
                                        interpreter(), why ? why : "dlopen failed",
                                        choose_python_advice),
                            where);
  }
  resolve_python_api(h, m_api, m_library);
}

/// 3. Starts it with the interpreter's own prefix and sys.path (a virtual environment's
/// included); no signal handlers of its own: prereg's Ctrl-C handling stays.
void python_runtime::initialize() {
  if (m_api.Py_IsInitialized() != 0)
    return;
  const auto str = [&](const char *k) { return probe_text(m_probe, k); };
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

/// prereg's module: the probed sys.path and executable, then the glue.
void python_runtime::install_glue() {
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
}

void python_runtime::run_code(const std::string &code, const char *what) {
  PyObject *r = m_api.PyRun_StringFlags(code.c_str(), py_file_input, m_glue, m_glue, nullptr);
  if (r == nullptr) {
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    m_api.PyErr_Fetch(&type, &value, &tb);
    throw environment_error(fmt::format("the embedded Python failed to run {}", what), m_library);
  }
  m_api.Py_DecRef(r);
}

PyObject *python_runtime::glue(const char *name) const {
  PyObject *f = m_api.PyDict_GetItemString(m_glue, name); // borrowed
  if (f == nullptr)
    throw io_error(fmt::format("prereg's Python glue has no {}", name));
  return f;
}

std::string python_runtime::take_error() {
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
  if (PyObject *args = m_api.PyTuple_New(2)) {
    for (long i = 0; i < 2; ++i) {
      PyObject *o = (i == 0 ? value : tb) != nullptr ? (i == 0 ? value : tb) : m_api.none;
      m_api.Py_IncRef(o);
      m_api.PyTuple_SetItem(args, i, o);
    }
    if (PyObject *r = m_api.PyObject_CallObject(glue("full_traceback"), args)) {
      if (const char *s = m_api.PyUnicode_AsUTF8(r))
        outside::append_arm_log(escape_for_message(out), s);
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

PyObject *python_runtime::call(const char *name, PyObject *args) {
  PyObject *r = m_api.PyObject_CallObject(glue(name), args);
  if (args != nullptr)
    m_api.Py_DecRef(args);
  if (r == nullptr)
    throw io_error(take_error());
  return r;
}

PyObject *python_runtime::tuple(std::initializer_list<PyObject *> items) {
  PyObject *t = m_api.PyTuple_New(static_cast<long>(items.size()));
  long i = 0;
  for (PyObject *o : items)
    m_api.PyTuple_SetItem(t, i++, o); // steals
  return t;
}

PyObject *python_runtime::str(const std::string &s) {
  return m_api.PyUnicode_FromString(s.c_str());
}

} // namespace prereg::outside
