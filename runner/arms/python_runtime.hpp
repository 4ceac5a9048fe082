// The embedded CPython interpreter of Python arms (docs/python-arms.md): found through the
// `python3` that $PREREG_PYTHON, else PATH, names; its libpython loaded (dlopen) and started
// once per process with that interpreter's prefix and sys.path; prereg's glue run in it.
#pragma once

#include "arms/python_api.hpp"
#include "base/json.hpp"

#include <initializer_list>
#include <string>

namespace prereg::outside {

/// "choose another interpreter with PREREG_PYTHON=/path/to/python3": the end of every message
/// about the interpreter prereg used.
extern const char *const choose_python_advice;

/// The process's one embedded interpreter.
class python_runtime {
public:
  static python_runtime &get();

  /// Starts the interpreter (once); a start that failed throws its error again.
  void start();

  [[nodiscard]] const python_api &api() const { return m_api; }
  /// The glue's function `name` (borrowed); throws io_error when it has none.
  [[nodiscard]] PyObject *glue(const char *name) const;
  [[nodiscard]] bool started() const { return m_started; }
  /// What the interpreter said about itself (version, executable, prefixes, sys.path, ...).
  [[nodiscard]] const json &probe() const { return m_probe; }
  /// The libpython loaded.
  [[nodiscard]] const std::string &library() const { return m_library; }
  /// "Python 3.11.2 at /usr/bin/python3 (PREREG_PYTHON=/usr/bin/python3)" or "... (python3 on
  /// PATH)": the interpreter that described itself; "" before it did.
  [[nodiscard]] std::string interpreter() const;

  /// The pending Python exception as one line (and clears it).
  std::string take_error();
  /// Calls glue function `name` with `args` (a new tuple, consumed); throws on a Python error.
  PyObject *call(const char *name, PyObject *args);
  /// A new tuple of `items` (each reference stolen).
  PyObject *tuple(std::initializer_list<PyObject *> items);
  /// A new Python str of `s`.
  PyObject *str(const std::string &s);

private:
  void start_once();
  void load_library(const std::string &where);
  void initialize();
  void install_glue();
  void run_code(const std::string &code, const char *what);

  python_api m_api{};
  PyObject *m_glue = nullptr; // borrowed: the module's dict lives as long as the interpreter
  bool m_started = false;
  std::string m_failure;
  json m_probe;
  std::string m_library;
  std::string m_where; ///< "PREREG_PYTHON=..." | "python3 on PATH"
};

} // namespace prereg::outside
