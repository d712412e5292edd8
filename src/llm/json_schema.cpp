#include "llm/json_schema.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "llm/extract.hpp"

namespace ok::llm {

using nlohmann::json;

namespace {

std::string type_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "unknown";
  }
}

bool has_type(const json& v, const std::string& t) {
  const std::string actual = type_of(v);
  if (t == actual) return true;
  if (t == "number") return actual == "integer";
  if (t == "integer" && actual == "number") {
    const double d = v.get<double>();
    return d == static_cast<double>(static_cast<int64_t>(d));
  }
  return false;
}

void check(const json& v, const json& s, const std::string& path, std::vector<std::string>& out) {
  if (!s.is_object()) return;
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_string()) types.push_back(s["type"].get<std::string>());
    if (s["type"].is_array())
      for (const auto& t : s["type"])
        if (t.is_string()) types.push_back(t.get<std::string>());
    const bool ok = types.empty() || std::any_of(types.begin(), types.end(),
                                                 [&](const auto& t) { return has_type(v, t); });
    if (!ok) {
      std::string want;
      for (const auto& t : types) want += (want.empty() ? "" : " or ") + t;
      out.push_back(fmt::format("{}: expected {}, got {}", path, want, type_of(v)));
      return;
    }
  }
  if (s.contains("enum") && s["enum"].is_array()) {
    const auto& e = s["enum"];
    if (std::find(e.begin(), e.end(), v) == e.end())
      out.push_back(fmt::format("{}: {} is not one of {}", path, v.dump(), e.dump()));
  }
  if (v.is_object()) {
    if (s.contains("required") && s["required"].is_array())
      for (const auto& r : s["required"])
        if (r.is_string() && !v.contains(r.get<std::string>()))
          out.push_back(
              fmt::format("{}: missing required property \"{}\"", path, r.get<std::string>()));
    if (s.contains("properties") && s["properties"].is_object())
      for (const auto& [name, sub] : s["properties"].items())
        if (v.contains(name)) check(v[name], sub, path + "." + name, out);
  }
  if (v.is_array() && s.contains("items"))
    for (size_t i = 0; i < v.size(); ++i)
      check(v[i], s["items"], fmt::format("{}[{}]", path, i), out);
}

std::optional<json> try_parse(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace

std::vector<std::string> validate_json(const json& value, const json& schema) {
  std::vector<std::string> out;
  check(value, schema, "$", out);
  return out;
}

util::Result<json> parse_json_reply(std::string_view text) {
  if (auto j = try_parse(text)) return *j;
  for (const auto& b : code_blocks(text))
    if (auto j = try_parse(b.code)) return *j;
  const auto obj = text.find('{');
  const auto arr = text.find('[');
  const auto first = std::min(obj, arr);
  if (first != std::string_view::npos) {
    const char close = text[first] == '{' ? '}' : ']';
    const auto last = text.rfind(close);
    if (last != std::string_view::npos && last > first)
      if (auto j = try_parse(text.substr(first, last - first + 1))) return *j;
  }
  std::string head(text.substr(0, 200));
  return util::fail(util::ErrorKind::kProtocol,
                    fmt::format("the reply holds no parseable JSON value; it starts: {}", head));
}

}  // namespace ok::llm
