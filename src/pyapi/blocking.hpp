// Running the engine from Python: long calls on a thread of their own with the GIL released, while
// the calling thread waits and checks for signals, so that Ctrl-C raises KeyboardInterrupt after
// the engine stopped what it was doing (nothing is left running); and the engine's errors as
// Python exceptions with the CLI's messages.
//
// Exceptions (created by init_errors, exported by the package as openkernel.BadInput and
// openkernel.InternalError): the CLI's exit code 2 (bad usage, bad input, an unusable environment)
// -> BadInput, a ValueError; every other error -> InternalError, a RuntimeError; kCancelled ->
// KeyboardInterrupt. Each carries `kind` (the error's kind, e.g. "bad_input") and `exit_code`.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "util/error.hpp"

namespace ok::pyapi {

namespace py = pybind11;

// Creates the exception classes in module `m`.
void init_errors(py::module_& m);

// Sets the Python exception for `e` and throws py::error_already_set (call with the GIL held).
[[noreturn]] void raise(const util::Error& e);

// Runs `work` on a new thread with the GIL released; the calling thread (holding the GIL) waits,
// checking for signals every 100 ms (only the main thread sees them). When a signal handler raises
// (Ctrl-C: KeyboardInterrupt), it sets `cancel`, which `work` must heed, waits for `work` to
// return and re-raises. Otherwise it returns `work`'s value or raises its error; a C++ exception
// from `work` is rethrown here.
nlohmann::json run_blocking(std::atomic<bool>& cancel,
                            const std::function<util::Result<nlohmann::json>()>& work);

// The JSON value as Python objects (dict, list, str, int, float, bool, None), and back.
py::object to_python(const nlohmann::json& j);
nlohmann::json from_python(const py::handle& o);

}  // namespace ok::pyapi
