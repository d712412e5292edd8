// Structured replies: pulling a JSON value out of a model's text and checking it against a small
// subset of JSON Schema (type, properties, required, enum, items).
//
// Pure functions over values; thread-safe. Other schema keywords are ignored, not enforced.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace ok::llm {

// Every violation, as "$.path: what is wrong"; empty when `value` conforms.
std::vector<std::string> validate_json(const nlohmann::json& value, const nlohmann::json& schema);

// The JSON value in a reply: the whole text, else a fenced block, else the outermost {...} or
// [...] span. kProtocol when none parses.
util::Result<nlohmann::json> parse_json_reply(std::string_view text);

}  // namespace ok::llm
