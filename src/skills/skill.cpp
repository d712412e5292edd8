#include "skills/skill.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace ok::skills {

using nlohmann::json;
using util::ErrorKind;

namespace {

util::Error bad(const std::string& what) {
  return {ErrorKind::kBadInput, what};
}

// A string field of `j`, required unless `fallback` is given.
util::Result<std::string> text_field(const json& j, const char* key,
                                     std::optional<std::string> fallback = std::nullopt) {
  if (!j.contains(key)) {
    if (fallback) return *fallback;
    return std::unexpected(bad(fmt::format("lacks \"{}\"", key)));
  }
  if (!j[key].is_string()) return std::unexpected(bad(fmt::format("\"{}\" is not a string", key)));
  return j[key].get<std::string>();
}

util::Result<std::vector<std::string>> strings_field(const json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  if (!j[key].is_array()) return std::unexpected(bad(fmt::format("\"{}\" is not a list", key)));
  for (const auto& v : j[key]) {
    if (!v.is_string()) return std::unexpected(bad(fmt::format("\"{}\" holds a non-string", key)));
    out.push_back(v.get<std::string>());
  }
  return out;
}

util::Result<std::optional<double>> number_field(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::optional<double>();
  if (!j[key].is_number()) return std::unexpected(bad(fmt::format("\"{}\" is not a number", key)));
  return std::optional<double>(j[key].get<double>());
}

json opt(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

bool one_of(const std::string& v, std::initializer_list<const char*> allowed) {
  return std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return v == a; });
}

}  // namespace

json Signature::to_json() const {
  return {{"pattern", pattern},
          {"ops", ops},
          {"log2_elements", log2_elements},
          {"log2_last_dim", log2_last_dim},
          {"dtypes", dtypes},
          {"backend", backend},
          {"arch", arch}};
}

util::Result<Signature> Signature::from_json(const json& j) {
  if (!j.is_object()) return std::unexpected(bad("the signature is not an object"));
  Signature s;
  auto pattern = text_field(j, "pattern", "");
  auto backend = text_field(j, "backend");
  auto arch = text_field(j, "arch", "any");
  auto ops = strings_field(j, "ops");
  auto dtypes = strings_field(j, "dtypes");
  for (auto* e : {&pattern, &backend, &arch})
    if (!*e) return std::unexpected(bad("signature " + e->error().message));
  for (auto* e : {&ops, &dtypes})
    if (!*e) return std::unexpected(bad("signature " + e->error().message));
  s.pattern = *pattern;
  s.backend = *backend;
  s.arch = *arch;
  s.ops = *ops;
  s.dtypes = *dtypes;
  for (auto [key, field] : {std::pair{"log2_elements", &s.log2_elements},
                            std::pair{"log2_last_dim", &s.log2_last_dim}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_number_integer() || j[key].get<int64_t>() < -1 || j[key].get<int64_t>() > 64)
      return std::unexpected(bad(fmt::format("signature \"{}\" is not an integer in -1..64", key)));
    *field = j[key].get<int>();
  }
  if (!one_of(s.backend, {"cpu", "triton", "cuda"}))
    return std::unexpected(bad("signature backend " + s.backend + " is not cpu, triton or cuda"));
  return s;
}

json Evidence::to_json() const {
  return {{"session", session},
          {"role", role},
          {"outcome", outcome},
          {"rank", rank},
          {"attempt", attempt ? json(*attempt) : json(nullptr)},
          {"speedup_before", opt(speedup_before)},
          {"speedup_after", opt(speedup_after)},
          {"hardware", hardware},
          {"created_at", created_at}};
}

util::Result<Evidence> Evidence::from_json(const json& j) {
  if (!j.is_object()) return std::unexpected(bad("an evidence entry is not an object"));
  Evidence e;
  auto session = text_field(j, "session");
  auto role = text_field(j, "role");
  auto outcome = text_field(j, "outcome");
  auto hardware = text_field(j, "hardware", "");
  auto created = text_field(j, "created_at", "");
  for (auto* f : {&session, &role, &outcome, &hardware, &created})
    if (!*f) return std::unexpected(bad("evidence " + f->error().message));
  e.session = *session;
  e.role = *role;
  e.outcome = *outcome;
  e.hardware = *hardware;
  e.created_at = *created;
  if (e.session.empty()) return std::unexpected(bad("evidence has an empty session"));
  if (!one_of(e.role, {"source", "used"}))
    return std::unexpected(bad("evidence role " + e.role + " is not source or used"));
  if (!one_of(e.outcome, {"helped", "failed", "neutral", "pending"}))
    return std::unexpected(
        bad("evidence outcome " + e.outcome + " is not helped, failed, neutral or pending"));
  if (j.contains("rank")) {
    if (!j["rank"].is_number_integer())
      return std::unexpected(bad("evidence rank is not an integer"));
    e.rank = j["rank"].get<int>();
  }
  if (j.contains("attempt") && !j["attempt"].is_null()) {
    if (!j["attempt"].is_number_integer())
      return std::unexpected(bad("evidence attempt is not an integer"));
    e.attempt = j["attempt"].get<int>();
  }
  auto before = number_field(j, "speedup_before");
  auto after = number_field(j, "speedup_after");
  if (!before || !after)
    return std::unexpected(bad("evidence " + (before ? after : before).error().message));
  e.speedup_before = *before;
  e.speedup_after = *after;
  return e;
}

double confidence(int helped, int failed) {
  return (helped + 1.0) / (helped + failed + 2.0);
}

int Skill::helped() const {
  return static_cast<int>(std::count_if(evidence.begin(), evidence.end(),
                                        [](const Evidence& e) { return e.outcome == "helped"; }));
}

int Skill::failed() const {
  return static_cast<int>(std::count_if(evidence.begin(), evidence.end(),
                                        [](const Evidence& e) { return e.outcome == "failed"; }));
}

double Skill::confidence() const {
  return skills::confidence(helped(), failed());
}

json Skill::to_json(bool with_evidence) const {
  json j = {{"id", id},
            {"kind", kind},
            {"provenance", provenance},
            {"signature", signature.to_json()},
            {"title", title},
            {"text", text},
            {"action", action},
            {"created_at", created_at}};
  if (with_evidence) {
    json ev = json::array();
    for (const auto& e : evidence) ev.push_back(e.to_json());
    j["evidence"] = std::move(ev);
    j["helped"] = helped();
    j["failed"] = failed();
    j["confidence"] = confidence();
  }
  return j;
}

util::Result<Skill> Skill::from_json(const json& j) {
  if (!j.is_object()) return std::unexpected(bad("a skill is not an object"));
  Skill s;
  auto id = text_field(j, "id");
  auto kind = text_field(j, "kind");
  auto provenance = text_field(j, "provenance");
  auto title = text_field(j, "title", "");
  auto text = text_field(j, "text");
  auto created = text_field(j, "created_at", "");
  for (auto* f : {&id, &kind, &provenance, &title, &text, &created})
    if (!*f) return std::unexpected(f->error());
  s.id = *id;
  s.kind = *kind;
  s.provenance = *provenance;
  s.title = *title;
  s.text = *text;
  s.created_at = *created;
  if (!one_of(s.kind, {"builtin", "model"}))
    return std::unexpected(bad("kind " + s.kind + " is not builtin or model"));
  if (!one_of(s.provenance, {"seed", "learned"}))
    return std::unexpected(bad("provenance " + s.provenance + " is not seed or learned"));
  auto sig = Signature::from_json(j.value("signature", json()));
  if (!sig) return std::unexpected(sig.error());
  s.signature = std::move(*sig);
  if (!j.contains("action") || !j["action"].is_object())
    return std::unexpected(bad("\"action\" is not an object"));
  s.action = j["action"];
  const json& a = s.action;
  if (s.kind == "builtin" && !(a.contains("template") && a["template"].is_string() &&
                               a.contains("params") && a["params"].is_object()))
    return std::unexpected(bad("a builtin skill's action needs \"template\" and \"params\""));
  if (s.kind == "model" && !(a.contains("technique") && a["technique"].is_string()))
    return std::unexpected(bad("a model skill's action needs \"technique\""));
  if (s.id != skill_id(s.kind, s.signature, s.action))
    return std::unexpected(
        bad("id " + s.id + " is not the hash of its kind, signature and action"));
  if (j.contains("evidence")) {
    if (!j["evidence"].is_array()) return std::unexpected(bad("\"evidence\" is not a list"));
    for (const auto& e : j["evidence"]) {
      auto ev = Evidence::from_json(e);
      if (!ev) return std::unexpected(ev.error());
      s.evidence.push_back(std::move(*ev));
    }
  }
  return s;
}

std::string skill_id(const std::string& kind, const Signature& s, const json& action) {
  // nlohmann's dump sorts object keys: a canonical text. A model skill's exemplar is an
  // illustration, not what the skill says: the same technique with another exemplar is one skill.
  json said = action;
  if (said.is_object()) said.erase("exemplar");
  const std::string text = kind + "\n" + s.to_json().dump() + "\n" + said.dump();
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("sk-{:016x}", h);
}

}  // namespace ok::skills
