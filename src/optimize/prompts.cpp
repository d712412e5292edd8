#include "optimize/prompts.hpp"

#include <fmt/core.h>

#include <kainjow/mustache.hpp>
#include <regex>

#include "util/paths.hpp"

namespace ok::optimize {

using nlohmann::json;
using util::ErrorKind;
using util::fail;
namespace mst = kainjow::mustache;

std::filesystem::path prompts_dir() {
  return util::resource_root() / "data/prompts";
}

util::Result<Template> load_template(const std::filesystem::path& dir, const std::string& name) {
  auto text = util::read_file(dir / (name + ".mustache"));
  if (!text) return std::unexpected(text.error());
  Template t{name, *text, 0};
  static const std::regex header(R"(^\{\{!\s*prompt\s+\S+\s+version\s+(\d+)\s*\}\})");
  std::smatch m;
  if (std::regex_search(t.text, m, header)) t.version = std::stoi(m[1]);
  return t;
}

namespace {

mst::data to_data(const json& v) {
  switch (v.type()) {
    case json::value_t::object: {
      mst::data d{mst::data::type::object};
      for (const auto& [k, x] : v.items()) d.set(k, to_data(x));
      return d;
    }
    case json::value_t::array: {
      mst::data d{mst::data::type::list};
      for (const auto& x : v) d.push_back(to_data(x));
      return d;
    }
    case json::value_t::string:
      return mst::data{v.get<std::string>()};
    case json::value_t::boolean:
      return mst::data{v.get<bool>()};
    case json::value_t::null:
      return mst::data{false};
    case json::value_t::number_float: {
      double x = v.get<double>();
      return mst::data{fmt::format("{:.4g}", x)};
    }
    default:
      return mst::data{v.dump()};
  }
}

}  // namespace

util::Result<std::string> render(const Template& t, const json& context) {
  mst::mustache tmpl{t.text};
  if (!tmpl.is_valid())
    return fail(ErrorKind::kBadInput,
                fmt::format("prompt template {} does not parse: {}", t.name, tmpl.error_message()));
  tmpl.set_custom_escape([](const std::string& s) { return s; });
  std::string out = tmpl.render(to_data(context));
  if (!tmpl.is_valid())
    return fail(ErrorKind::kBadInput, fmt::format("prompt template {} failed to render: {}", t.name,
                                                  tmpl.error_message()));
  return out;
}

std::string trim_middle(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t head = limit / 3, tail = limit - head;
  return text.substr(0, head) +
         fmt::format("\n[... {} characters cut ...]\n", text.size() - head - tail) +
         text.substr(text.size() - tail);
}

}  // namespace ok::optimize
