// The pieces of the extension openkernel._core (module.cpp puts them together; docs/python.md
// documents the Python API they serve). Each binds its functions and classes into `m`.
#pragma once

#include <pybind11/pybind11.h>

namespace ok::pyapi {

namespace py = pybind11;

void bind_evaluator(py::module_& m);  // Evaluator (evaluator.cpp)
void bind_sessions(py::module_& m);   // optimize, sweep (sessions.cpp)

}  // namespace ok::pyapi
