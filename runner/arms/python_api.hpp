// The part of the CPython C API that Python arms use, as a table of function pointers resolved
// from the libpython loaded at run time (dlopen), so that prereg links no Python.
#pragma once

#include <string>

namespace prereg::outside {

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

/// Py_file_input: PyRun_StringFlags runs a module's statements.
constexpr int py_file_input = 257;

/// Fills `api` from the dlopen handle `h` of `library`; throws environment_error naming the
/// first symbol the library lacks.
void resolve_python_api(void *h, python_api &api, const std::string &library);

} // namespace prereg::outside
