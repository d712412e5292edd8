#include "skills/library.hpp"

#include <fmt/chrono.h>
#include <fmt/core.h>

#include <chrono>
#include <map>
#include <set>

#include "generate/skills.hpp"

namespace ok::skills {

using nlohmann::json;
using util::ErrorKind;

namespace {

store::SkillRow row_of(const Skill& s) {
  return {.id = s.id,
          .kind = s.kind,
          .provenance = s.provenance,
          .signature_json = s.signature.to_json().dump(),
          .title = s.title,
          .text = s.text,
          .action_json = s.action.dump(),
          .created_at = s.created_at};
}

store::SkillEvidenceRow row_of(const std::string& skill, const Evidence& e) {
  return {.skill_id = skill,
          .session = e.session,
          .role = e.role,
          .outcome = e.outcome,
          .rank = e.rank,
          .attempt = e.attempt ? std::optional<int64_t>(*e.attempt) : std::nullopt,
          .speedup_before = e.speedup_before,
          .speedup_after = e.speedup_after,
          .hardware = e.hardware,
          .created_at = e.created_at};
}

Evidence evidence_of(const store::SkillEvidenceRow& r) {
  return {.session = r.session,
          .role = r.role,
          .outcome = r.outcome,
          .rank = r.rank,
          .attempt = r.attempt ? std::optional<int>(static_cast<int>(*r.attempt)) : std::nullopt,
          .speedup_before = r.speedup_before,
          .speedup_after = r.speedup_after,
          .hardware = r.hardware,
          .created_at = r.created_at};
}

util::Result<Skill> skill_of(const store::SkillRow& r) {
  json j = {{"id", r.id},       {"kind", r.kind}, {"provenance", r.provenance},
            {"title", r.title}, {"text", r.text}, {"created_at", r.created_at}};
  j["signature"] = json::parse(r.signature_json, nullptr, false);
  j["action"] = json::parse(r.action_json, nullptr, false);
  auto s = Skill::from_json(j);
  if (!s)
    return util::fail(ErrorKind::kBadInput, fmt::format("the stored skill {} is unreadable: {}",
                                                        r.id, s.error().message));
  return s;
}

std::string now_utc() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                     std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
}

}  // namespace

util::Result<std::vector<Skill>> load(store::Store& store) {
  auto rows = store.skill_rows();
  if (!rows) return std::unexpected(rows.error());
  auto evidence = store.skill_evidence();
  if (!evidence) return std::unexpected(evidence.error());
  std::map<std::string, std::vector<Evidence>> by_skill;
  for (const auto& e : *evidence) by_skill[e.skill_id].push_back(evidence_of(e));
  std::vector<Skill> out;
  for (const auto& r : *rows) {
    auto s = skill_of(r);
    if (!s) return std::unexpected(s.error());
    s->evidence = std::move(by_skill[r.id]);
    out.push_back(std::move(*s));
  }
  return out;
}

util::Result<Skill> find(store::Store& store, const std::string& id) {
  auto all = load(store);
  if (!all) return std::unexpected(all.error());
  std::vector<const Skill*> hits;
  for (const auto& s : *all) {
    if (s.id == id) return s;
    if (!id.empty() && s.id.rfind(id, 0) == 0) hits.push_back(&s);
  }
  if (hits.size() == 1) return *hits.front();
  return util::fail(
      ErrorKind::kBadInput,
      hits.empty() ? fmt::format("no skill {} in {}", id, store.path().string())
                   : fmt::format("{} skills start with {}: give more of the id", hits.size(), id));
}

util::Result<std::vector<Skill>> seed_skills(const std::filesystem::path& dir) {
  auto loaded = generate::load_skills(dir);
  if (!loaded) return std::unexpected(loaded.error());
  std::vector<Skill> out;
  for (const auto& k : loaded->kernels) {
    Skill s;
    s.kind = "builtin";
    s.provenance = "seed";
    s.signature.pattern = k.pattern;
    s.signature.backend = k.backend;
    json first = json::object();
    for (const auto& [name, values] : k.params.items())
      if (values.is_array() && !values.empty()) first[name] = values.front();
    s.action = {{"template", k.id}, {"params", {{k.id, first}}}};
    s.title =
        fmt::format("{} {} template on {}, its default parameters", k.id, k.pattern, k.backend);
    s.text = k.description;
    s.id = skill_id(s.kind, s.signature, s.action);
    out.push_back(std::move(s));
  }
  return out;
}

util::Result<int> ensure_seeds(store::Store& store, const std::filesystem::path& dir) {
  auto seeds = seed_skills(dir);
  if (!seeds) return std::unexpected(seeds.error());
  int added = 0;
  auto r = store.transaction([&]() -> util::Result<void> {
    auto marker = store.search_state("global", "skills_seeded");
    if (!marker) return std::unexpected(marker.error());
    json seeded = *marker ? json::parse(**marker, nullptr, false) : json::array();
    if (!seeded.is_array()) seeded = json::array();
    std::set<std::string> known;
    for (const auto& id : seeded)
      if (id.is_string()) known.insert(id.get<std::string>());
    bool changed = false;
    for (const auto& s : *seeds) {
      if (known.count(s.id)) continue;
      auto w = store.insert_skill(row_of(s));
      if (!w) return std::unexpected(w.error());
      added += *w;
      seeded.push_back(s.id);
      changed = true;
    }
    if (!changed) return {};
    return store.put_search_state("global", "skills_seeded", seeded.dump());
  });
  if (!r) return std::unexpected(r.error());
  return added;
}

util::Result<void> record_uses(store::Store& store, const std::string& session,
                               const std::vector<RankedSkill>& ranked,
                               const std::string& hardware) {
  return store.transaction([&]() -> util::Result<void> {
    for (const auto& r : ranked) {
      Evidence e{.session = session, .role = "used", .outcome = "pending", .rank = r.rank};
      e.hardware = hardware;
      if (auto w = store.put_skill_evidence(row_of(r.skill.id, e)); !w) return w;
    }
    return {};
  });
}

json export_json(const std::vector<Skill>& skills) {
  json list = json::array();
  for (const auto& s : skills) list.push_back(s.to_json(true));
  return {{"format", kFormat},
          {"version", kFormatVersion},
          {"exported_at", now_utc()},
          {"skills", std::move(list)}};
}

util::Result<ImportReport> import_json(store::Store& store, const json& doc) {
  auto bad = [](const std::string& why) { return util::fail(ErrorKind::kBadInput, why); };
  if (!doc.is_object()) return bad("not a skills file: the document is not a JSON object");
  if (doc.value("format", json()) != kFormat)
    return bad(fmt::format("not a skills file: \"format\" is not \"{}\"", kFormat));
  if (!doc.contains("version") || !doc["version"].is_number_integer())
    return bad("the skills file has no integer \"version\"");
  if (doc["version"].get<int64_t>() != kFormatVersion)
    return bad(fmt::format("the skills file has version {}; this openkernel reads version {}",
                           doc["version"].dump(), kFormatVersion));
  if (!doc.contains("skills") || !doc["skills"].is_array())
    return bad("the skills file has no list \"skills\"");
  std::vector<Skill> skills;
  std::set<std::string> ids;
  for (size_t i = 0; i < doc["skills"].size(); ++i) {
    auto s = Skill::from_json(doc["skills"][i]);
    if (!s) return bad(fmt::format("skill {} of the file: {}", i + 1, s.error().message));
    if (!ids.insert(s->id).second)
      return bad(fmt::format("skill {} of the file: {} is listed twice", i + 1, s->id));
    skills.push_back(std::move(*s));
  }
  ImportReport rep;
  auto r = store.transaction([&]() -> util::Result<void> {
    for (const auto& s : skills) {
      auto added = store.insert_skill(row_of(s));
      if (!added) return std::unexpected(added.error());
      rep.added += *added;
      ++rep.skills;
      auto have = store.skill_evidence(s.id);
      if (!have) return std::unexpected(have.error());
      std::map<std::string, std::string> outcome;
      for (const auto& e : *have) outcome[e.session] = e.outcome;
      for (const auto& e : s.evidence) {
        auto it = outcome.find(e.session);
        if (e.outcome == "pending" && it != outcome.end() && it->second != "pending") continue;
        if (auto w = store.put_skill_evidence(row_of(s.id, e)); !w) return w;
        ++rep.evidence;
      }
    }
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return rep;
}

util::Result<std::vector<Skill>> prune(store::Store& store, double min_confidence) {
  auto all = load(store);
  if (!all) return std::unexpected(all.error());
  std::vector<Skill> gone;
  std::vector<std::string> ids;
  for (const auto& s : *all)
    if (s.confidence() < min_confidence) {
      gone.push_back(s);
      ids.push_back(s.id);
    }
  if (ids.empty()) return gone;
  if (auto d = store.delete_skills(ids); !d) return std::unexpected(d.error());
  return gone;
}

}  // namespace ok::skills
