// Internal to src/search: how the Planner's notes and decisions print a template value (a string
// as itself, anything else as JSON).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ok::search {

inline std::string fmt_value(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace ok::search
