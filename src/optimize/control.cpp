#include "optimize/control.hpp"

namespace ok::optimize {

std::string Control::state() const {
  if (stop_requested()) return "stopping";
  return paused() ? "paused" : "running";
}

}  // namespace ok::optimize
