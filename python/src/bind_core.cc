// python/src/bind_core.cc — errors, threads, and array plumbing shared by every concept.
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "volley/core/parallel.h"

namespace volley::python {

namespace {

// The Python classes for each ErrorKind; created once in bind_core and kept for the process.
struct ErrorClasses {
  PyObject* base = nullptr;
  PyObject* value = nullptr;
  PyObject* index = nullptr;
  PyObject* io = nullptr;
  PyObject* runtime = nullptr;
  PyObject* internal = nullptr;
  PyObject* connection = nullptr;
  PyObject* timeout = nullptr;
  PyObject* permission = nullptr;
  // Raised by the Python package only (no ErrorKind maps to them).
  PyObject* type = nullptr;
  PyObject* import = nullptr;
};
ErrorClasses error_classes;

PyObject* class_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kValue:
      return error_classes.value;
    case ErrorKind::kIndex:
      return error_classes.index;
    case ErrorKind::kIo:
      return error_classes.io;
    case ErrorKind::kRuntime:
      return error_classes.runtime;
    case ErrorKind::kInternal:
      return error_classes.internal;
    case ErrorKind::kConnection:
      return error_classes.connection;
    case ErrorKind::kTimeout:
      return error_classes.timeout;
    case ErrorKind::kPermission:
      return error_classes.permission;
  }
  return error_classes.runtime;
}

// Creates `volley.<name>` deriving from `bases` (a class or a tuple) and exports it from `m`.
PyObject* new_exception(nb::module_& m, const char* name, const char* doc, nb::handle bases) {
  const std::string qualified = std::string("volley.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (cls == nullptr) throw nb::python_error();
  m.attr(name) = nb::handle(cls);  // the module takes a reference; ours is never released
  return cls;
}

void bind_errors(nb::module_& m) {
  error_classes.base = new_exception(
      m, "VolleyError",
      "Base class of every error Volley raises on purpose. Each concrete error also derives from "
      "the matching builtin (ValueError, TypeError, IndexError, OSError, RuntimeError, "
      "ImportError, ...), so code that catches builtins keeps working.",
      PyExc_Exception);
  nb::handle base(error_classes.base);
  error_classes.value =
      new_exception(m, "VolleyValueError", "A bad argument value, shape or dtype.",
                    nb::make_tuple(base, nb::handle(PyExc_ValueError)));
  error_classes.index =
      new_exception(m, "VolleyIndexError", "An id or index out of range; the message names it.",
                    nb::make_tuple(base, nb::handle(PyExc_IndexError)));
  error_classes.io = new_exception(
      m, "VolleyOSError", "A file or network problem: missing, truncated or corrupt files.",
      nb::make_tuple(base, nb::handle(PyExc_OSError)));
  error_classes.runtime =
      new_exception(m, "VolleyRuntimeError", "A failure while running (e.g. a worker died).",
                    nb::make_tuple(base, nb::handle(PyExc_RuntimeError)));
  error_classes.internal = new_exception(
      m, "VolleyInternalError", "A broken invariant inside Volley: a bug, please report it.",
      nb::handle(error_classes.runtime));
  error_classes.connection =
      new_exception(m, "VolleyConnectionError",
                    "A Volley server that is down, unreachable, or went away during a call.",
                    nb::make_tuple(base, nb::handle(PyExc_ConnectionError)));
  error_classes.timeout =
      new_exception(m, "VolleyTimeoutError", "A call to a Volley server passed its deadline.",
                    nb::make_tuple(base, nb::handle(PyExc_TimeoutError)));
  error_classes.permission = new_exception(
      m, "VolleyPermissionError", "A Volley server refused a missing or wrong access token.",
      nb::make_tuple(base, nb::handle(PyExc_PermissionError)));
  error_classes.type = new_exception(m, "VolleyTypeError",
                                     "An argument of the wrong type (e.g. not a volley.Graph).",
                                     nb::make_tuple(base, nb::handle(PyExc_TypeError)));
  error_classes.import = new_exception(
      m, "VolleyImportError", "An optional dependency (torch, torch_geometric) is missing.",
      nb::make_tuple(base, nb::handle(PyExc_ImportError)));
  // Raised from Python only (no C++ counterpart): a feature another issue brings.
  new_exception(m, "VolleyNotImplementedError",
                "A documented argument or mode Volley does not support yet; the message names the "
                "issue that brings it.",
                nb::make_tuple(base, nb::handle(PyExc_NotImplementedError)));

  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      // Messages may quote bytes of a user's file that are not UTF-8 (a corrupt volley.json):
      // those are escaped (\xNN) rather than lost with the whole message.
      const std::string_view text = e.what();
      PyObject* message = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()),
                                               "backslashreplace");
      if (message == nullptr) {
        PyErr_Clear();
        PyErr_SetString(class_for(e.kind()), "(a Volley error whose message cannot be decoded)");
        return;
      }
      PyErr_SetObject(class_for(e.kind()), message);
      Py_DECREF(message);
    }
  });
}

}  // namespace

void bind_core(nb::module_& m) {
  bind_errors(m);

  m.def("set_num_threads", &set_num_threads, nb::arg("num_threads"),
        nb::call_guard<nb::gil_scoped_release>(),
        "Sets the number of threads (>= 1, the caller included) of Volley's thread pool.");
  m.def("get_num_threads", &get_num_threads, "Number of threads of Volley's thread pool.");

  // Test hook: wraps an array as a volley::Array and hands it back, both ways zero-copy.
  m.def(
      "_array_round_trip",
      [](const InputArray& input) { return array_to_python(array_from_python(input, "array")); },
      nb::arg("array"));
  // Test hook: a fresh, writable Volley-owned array (int64, 0..n-1).
  m.def(
      "_arange",
      [](int64_t n) {
        Array array = Array::empty(DType::kInt64, {n});
        int64_t* values = array.data<int64_t>();
        for (int64_t i = 0; i < n; ++i) values[i] = i;
        return array_to_python(array);
      },
      nb::arg("n"));
}

}  // namespace volley::python
