// Skills: the data the builtin generator renders from, one JSON file each in data/skills.
//
// Two kinds of file share the fields id, backend, pattern and description:
// - an op table ("ops": name -> {arity, cpp, cuda, triton, params, transcendental}): per-backend
//   expression templates for each primitive elementwise op, with {{a}}, {{b}}, {{c}} for the
//   operands and {{name}} for scalar parameters (params in the order of the op's positional
//   arguments after the input); the same file holds "ir_ops" (family -> op names), the one
//   vocabulary of the graph IR that the worker's analyze emits and lower() reads;
// - a kernel skill ("params": name -> list of values, "templates": name -> mustache text): the
//   skeleton of one kernel family for one backend and its parameter space.
// Loaded once per propose() call; immutable afterwards.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace ok::generate {

struct OpTemplate {
  int arity = 1;
  std::map<std::string, std::string> expr;  // backend (cpp|cuda|triton) -> template
  // Parameter name -> default value, in the order of the op's positional arguments after the input.
  nlohmann::ordered_json defaults = nlohmann::ordered_json::object();
  bool transcendental = false;  // calls libm-style functions (matters for vectorising on CPU)
};

struct Skill {
  std::string id;
  std::string backend;  // cpu|triton|cuda
  std::string pattern;  // pointwise|row
  std::string description;
  nlohmann::json params = nlohmann::json::object();  // name -> [values], best prior first
  std::map<std::string, std::string> templates;
};

struct Skills {
  std::map<std::string, OpTemplate> ops;
  std::map<std::string, std::string> ir_family;  // graph IR op -> its family in "ir_ops"
  std::vector<Skill> kernels;
  const Skill* find(const std::string& backend, const std::string& pattern) const;
};

util::Result<Skills> load_skills(const std::filesystem::path& dir);

// Renders a mustache template with a JSON context; no HTML escaping (we emit code).
util::Result<std::string> render_template(const std::string& text, const nlohmann::json& context);

}  // namespace ok::generate
