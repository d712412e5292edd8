// Prompt templates: versioned Mustache files under data/prompts/, rendered from a JSON context.
//
// A template's first line may be a comment `{{! prompt NAME version N }}`; the version is
// recorded with every attempt so results can be traced to the prompt that produced them.
// Rendering does no HTML escaping (prompts are plain text). Pure functions over values.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "util/error.hpp"

namespace ok::optimize {

struct Template {
  std::string name;
  std::string text;
  int version = 0;
};

// data/prompts under the resource root.
std::filesystem::path prompts_dir();
util::Result<Template> load_template(const std::filesystem::path& dir, const std::string& name);
// Renders `t` with `context` (objects, arrays, strings, numbers, booleans; null is false).
// kBadInput when the template does not parse, naming it and the error.
util::Result<std::string> render(const Template& t, const nlohmann::json& context);

// Shortens `text` to at most `limit` characters, keeping the head and the tail (where compiler
// errors and tracebacks say the most) around a marker that says how much was cut.
std::string trim_middle(const std::string& text, size_t limit);

}  // namespace ok::optimize
