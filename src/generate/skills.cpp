#include "generate/skills.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <kainjow/mustache.hpp>
#include <sstream>

namespace ok::generate {

namespace {

namespace mu = kainjow::mustache;

mu::data to_data(const nlohmann::json& j) {
  if (j.is_object()) {
    mu::data d{mu::data::type::object};
    for (const auto& [k, v] : j.items()) d.set(k, to_data(v));
    return d;
  }
  if (j.is_array()) {
    mu::data d{mu::data::type::list};
    for (const auto& v : j) d.push_back(to_data(v));
    return d;
  }
  if (j.is_boolean())
    return j.get<bool>() ? mu::data{mu::data::type::bool_true}
                         : mu::data{mu::data::type::bool_false};
  if (j.is_string()) return mu::data{j.get<std::string>()};
  if (j.is_null()) return mu::data{mu::data::type::bool_false};
  return mu::data{j.dump()};
}

// Parsed keeping the files' key order: an op's params are positional in that order.
util::Result<nlohmann::ordered_json> read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in)
    return util::fail(util::ErrorKind::kBadInput, fmt::format("cannot read skill {}", p.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::ordered_json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return util::fail(util::ErrorKind::kBadInput,
                      fmt::format("skill {} is not a JSON object", p.string()));
  for (const char* key : {"id", "backend", "pattern", "description"})
    if (!j.contains(key) || !j[key].is_string())
      return util::fail(util::ErrorKind::kBadInput,
                        fmt::format("skill {} lacks the string field \"{}\"", p.string(), key));
  return j;
}

// "ir_ops": family -> [op names]; each op in one family.
util::Result<void> read_ir_ops(const nlohmann::ordered_json& j, const std::filesystem::path& p,
                               Skills& out) {
  auto bad = [&](const std::string& what) {
    return util::fail(util::ErrorKind::kBadInput, fmt::format("skill {}: {}", p.string(), what));
  };
  if (!j.contains("ir_ops") || !j["ir_ops"].is_object())
    return bad("the op table lacks the graph IR's vocabulary \"ir_ops\"");
  for (const auto& [family, ops] : j["ir_ops"].items()) {
    if (!ops.is_array()) return bad(fmt::format("ir_ops {} is not a list", family));
    for (const auto& op : ops) {
      if (!op.is_string()) return bad(fmt::format("ir_ops {} holds a non-string", family));
      if (!out.ir_family.emplace(op.get<std::string>(), family).second)
        return bad(fmt::format("ir_ops lists {} twice", op.get<std::string>()));
    }
  }
  return {};
}

}  // namespace

const Skill* Skills::find(const std::string& backend, const std::string& pattern) const {
  for (const auto& s : kernels)
    if (s.backend == backend && s.pattern == pattern) return &s;
  return nullptr;
}

util::Result<Skills> load_skills(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return util::fail(util::ErrorKind::kEnvironment,
                      fmt::format("skills directory {} does not exist", dir.string()));
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  Skills out;
  for (const auto& f : files) {
    auto j = read_json(f);
    if (!j) return std::unexpected(j.error());
    if (j->contains("ops")) {
      if (auto r = read_ir_ops(*j, f, out); !r) return std::unexpected(r.error());
      for (const auto& [name, op] : (*j)["ops"].items()) {
        OpTemplate t;
        t.arity = op.value("arity", 1);
        t.transcendental = op.value("transcendental", false);
        if (op.contains("params")) t.defaults = op["params"];
        for (const char* b : {"cpp", "cuda", "triton"}) {
          if (!op.contains(b) || !op[b].is_string())
            return util::fail(
                util::ErrorKind::kBadInput,
                fmt::format("op {} in skill {} lacks a {} template", name, f.string(), b));
          t.expr[b] = op[b].get<std::string>();
        }
        out.ops[name] = std::move(t);
      }
      continue;
    }
    Skill s;
    s.id = (*j)["id"].get<std::string>();
    s.backend = (*j)["backend"].get<std::string>();
    s.pattern = (*j)["pattern"].get<std::string>();
    s.description = (*j)["description"].get<std::string>();
    if (j->contains("params")) s.params = nlohmann::json((*j)["params"]);
    if (!j->contains("templates") || !(*j)["templates"].is_object())
      return util::fail(util::ErrorKind::kBadInput,
                        fmt::format("skill {} has neither \"ops\" nor \"templates\"", f.string()));
    for (const auto& [name, text] : (*j)["templates"].items()) {
      // A template is a string or a list of lines (easier to read in JSON).
      std::string body;
      if (text.is_array()) {
        for (const auto& line : text) body += line.get<std::string>() + "\n";
      } else {
        body = text.get<std::string>();
      }
      s.templates[name] = std::move(body);
    }
    out.kernels.push_back(std::move(s));
  }
  if (out.ops.empty())
    return util::fail(util::ErrorKind::kBadInput,
                      fmt::format("no op table (a skill with \"ops\") in {}", dir.string()));
  return out;
}

util::Result<std::string> render_template(const std::string& text, const nlohmann::json& context) {
  mu::mustache tmpl{text};
  if (!tmpl.is_valid())
    return util::fail(util::ErrorKind::kInternal,
                      fmt::format("bad template: {}", tmpl.error_message()));
  tmpl.set_custom_escape([](const std::string& s) { return s; });
  std::string out = tmpl.render(to_data(context));
  if (!tmpl.is_valid())
    return util::fail(util::ErrorKind::kInternal,
                      fmt::format("template render failed: {}", tmpl.error_message()));
  return out;
}

}  // namespace ok::generate
