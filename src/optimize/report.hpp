// The session report: one JSON object (the last line of `optimize --json`, and report.json) and a
// Markdown rendering (report.md). Keys: docs/optimize.md. Pure functions over values.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "optimize/session.hpp"

namespace ok::optimize {

nlohmann::json report_json(const Options& o, const Outcome& out);
std::string report_markdown(const nlohmann::json& report);

}  // namespace ok::optimize
