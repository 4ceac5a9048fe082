// The CPython C API table, resolved from a loaded libpython (python_api.hpp).
#include "arms/python_api.hpp"

#include "prereg/error.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>

namespace prereg::outside {
namespace {

template <class F> void sym(void *h, F &f, const char *name, const std::string &library) {
  void *p = ::dlsym(h, name);
  if (p == nullptr)
    throw environment_error(fmt::format("{} lacks the C API function {}", library, name), library);
  std::memcpy(&f, &p, sizeof(f));
}

} // namespace

void resolve_python_api(void *h, python_api &api, const std::string &library) {
#define PREREG_PY_SYM(n) sym(h, api.n, #n, library)
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
  api.none = ::dlsym(h, "_Py_NoneStruct");
  if (api.none == nullptr)
    throw environment_error(fmt::format("{} lacks _Py_NoneStruct", library), library);
}

} // namespace prereg::outside
