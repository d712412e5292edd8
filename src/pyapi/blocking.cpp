#include "pyapi/blocking.hpp"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "llm/types.hpp"

namespace ok::pyapi {

using nlohmann::json;

namespace {
// Created once by init_errors and kept for the life of the interpreter.
PyObject* g_bad_input = nullptr;
PyObject* g_internal = nullptr;
}  // namespace

void init_errors(py::module_& m) {
  g_bad_input = PyErr_NewExceptionWithDoc(
      "openkernel._core.BadInput",
      "Bad usage or bad input (the CLI's exit code 2): a missing or malformed file, an unknown "
      "option value, no usable Python or GPU.",
      PyExc_ValueError, nullptr);
  g_internal = PyErr_NewExceptionWithDoc(
      "openkernel._core.InternalError",
      "An internal error (the CLI's exit code 1): a crashed worker, a failed model call.",
      PyExc_RuntimeError, nullptr);
  m.attr("BadInput") = py::handle(g_bad_input);
  m.attr("InternalError") = py::handle(g_internal);
}

void raise(const util::Error& e) {
  if (e.kind == util::ErrorKind::kCancelled) {
    PyErr_SetString(PyExc_KeyboardInterrupt, e.message.c_str());
    throw py::error_already_set();
  }
  const int code = util::exit_code(e);
  py::object cls = py::reinterpret_borrow<py::object>(code == 2 ? g_bad_input : g_internal);
  py::object exc = cls(e.message);
  exc.attr("kind") = std::string(llm::error_kind_name(e.kind));
  exc.attr("exit_code") = code;
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw py::error_already_set();
}

json run_blocking(std::atomic<bool>& cancel, const std::function<util::Result<json>()>& work) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::optional<util::Result<json>> result;
  std::exception_ptr thrown;
  std::thread runner([&] {
    try {
      result.emplace(work());
    } catch (...) {
      thrown = std::current_exception();
    }
    std::lock_guard lock(mu);
    done = true;
    cv.notify_all();
  });
  std::optional<py::error_already_set> interrupted;
  while (true) {
    {
      py::gil_scoped_release release;
      std::unique_lock lock(mu);
      if (cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return done; })) break;
    }
    if (!interrupted && PyErr_CheckSignals() != 0) {
      interrupted.emplace();  // takes the pending exception (KeyboardInterrupt)
      cancel.store(true);
    }
  }
  {
    py::gil_scoped_release release;
    runner.join();
  }
  if (interrupted) throw std::move(*interrupted);
  if (thrown) std::rethrow_exception(thrown);
  if (!*result) raise(result->error());
  return std::move(**result);
}

py::object to_python(const json& j) {
  return py::module_::import("json").attr("loads")(
      j.dump(-1, ' ', false, json::error_handler_t::replace));
}

json from_python(const py::handle& o) {
  std::string text = py::str(py::module_::import("json").attr("dumps")(o));
  return json::parse(text);
}

}  // namespace ok::pyapi
