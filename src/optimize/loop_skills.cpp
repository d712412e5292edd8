// The orchestrator and the skill library (docs/skills.md): the skills a session is fed at its
// start (retrieved for a new session and kept under search_state (SESSION, "skills"), so a resume
// replays the same order), and what the finished session teaches the library (loop.hpp).
#include <fmt/core.h>

#include <algorithm>

#include "optimize/loop.hpp"
#include "skills/learn.hpp"
#include "skills/library.hpp"
#include "util/paths.hpp"

namespace ok::optimize {

using nlohmann::json;

namespace {

json ranked_json(const std::vector<skills::RankedSkill>& ranked) {
  json out = json::array();
  for (const auto& r : ranked)
    out.push_back({{"skill", r.skill.to_json(true)},
                   {"signature_score", r.signature_score},
                   {"text_score", r.text_score},
                   {"rank", r.rank}});
  return out;
}

// The skills a session recorded; nullopt when the record is unreadable.
std::optional<std::vector<skills::RankedSkill>> ranked_from(const json& j) {
  if (!j.is_array()) return std::nullopt;
  std::vector<skills::RankedSkill> out;
  for (const auto& r : j) {
    auto s = skills::Skill::from_json(r.value("skill", json()));
    if (!s) return std::nullopt;
    out.push_back({std::move(*s), r.value("signature_score", 0.0), r.value("text_score", 0.0),
                   r.value("rank", 0)});
  }
  return out;
}

json used_json(const std::vector<skills::RankedSkill>& ranked) {
  json out = json::array();
  for (const auto& r : ranked)
    out.push_back({{"id", r.skill.id},
                   {"title", r.skill.title},
                   {"provenance", r.skill.provenance},
                   {"rank", r.rank},
                   {"outcome", "pending"}});
  return out;
}

std::string device_name(const json& device) {
  return device.is_object() ? device.value("name", std::string()) : std::string();
}

}  // namespace

// A new session retrieves (seeding the library on first use); a resumed one takes what it
// recorded, so its template order, and therefore its replay, is the same. Failing to read or
// write the library is a warning: the session runs without skills.
util::Result<void> Loop::choose_skills(std::vector<json>& points) {
  skills_signature_ = skills::signature_of(problem_.graph, problem_.inspect, problem_.device,
                                           options_.backend, points);
  // The problem's signature, kept with a new session (with or without skills) so that a replay
  // of its measurements (bench/skills_ablation) retrieves as this session would have.
  if (outcome_.attempts.empty())
    if (auto w = deps_.store->put_search_state(session_id_, "signature",
                                               skills_signature_.to_json().dump());
        !w)
      observer_.warning("the problem's signature was not recorded: " + w.error().message);
  if (!options_.skills) return {};
  auto saved = deps_.store->search_state(session_id_, "skills");
  if (!saved) return std::unexpected(saved.error());
  std::vector<skills::RankedSkill> ranked;
  if (*saved) {
    auto r = ranked_from(json::parse(**saved, nullptr, false));
    if (!r) {
      observer_.warning("the skills this session recorded are unreadable; it resumes without");
      return {};
    }
    ranked = std::move(*r);
  } else if (outcome_.attempts.empty()) {
    auto lib = [&]() -> util::Result<std::vector<skills::Skill>> {
      if (auto s = skills::ensure_seeds(*deps_.store, util::resource_root() / "data/skills"); !s)
        return std::unexpected(s.error());
      return skills::load(*deps_.store);
    }();
    if (!lib) {
      observer_.warning("the skill library is unreadable, so no skills are used: " +
                        lib.error().message);
      return {};
    }
    ranked = skills::retrieve(*lib, skills_signature_, {.query = problem_.name, .points = points});
    auto w = deps_.store->put_search_state(session_id_, "skills", ranked_json(ranked).dump());
    if (w) w = skills::record_uses(*deps_.store, session_id_, ranked, device_name(problem_.device));
    if (!w) observer_.warning("the skills used were not recorded: " + w.error().message);
  } else {
    return {};  // a session from before the library: it resumes as it ran
  }
  skills_report_ = {{"used", used_json(ranked)}, {"learned", nullptr}};
  problem_.library = std::move(ranked);
  if (!problem_.library.empty() && !points.empty()) points = deps_.generator->space(problem_);
  std::string names;
  for (const auto& r : problem_.library) names += (names.empty() ? "" : ", ") + r.skill.id;
  if (!names.empty())
    skills_note_ = fmt::format("{} skills fed: {}", problem_.library.size(), names);
  return {};
}

// Each skill fed, as a seeded intent (search::SeedIntent): a builtin skill with the template
// point it names, a model's with its technique. A session resumed from before seeded intents
// (its recorded tree has attempts but no intent of source "skill") is left as it ran, so its
// replay gives the directions it recorded.
util::Result<void> Loop::seed_intents(const std::vector<json>& points) {
  if (problem_.library.empty()) return {};
  if (!outcome_.attempts.empty()) {
    auto saved = deps_.store->search_state(session_id_, "intents");
    if (!saved) return std::unexpected(saved.error());
    const json tree = *saved ? json::parse(**saved, nullptr, false) : json();
    const json intents = tree.is_object() ? tree.value("intents", json::array()) : json::array();
    const bool seeded = std::any_of(intents.begin(), intents.end(), [](const json& i) {
      return i.is_object() && i.value("source", std::string()) == "skill";
    });
    if (!seeded) return {};
  }
  planner_->seed(skills::seed_intents(problem_.library, points));
  return {};
}

// The finished session's lesson: distilled by rule and the uses resolved, in one transaction.
void Loop::learn_skills() {
  if (!options_.skills || outcome_.attempts.empty()) return;
  skills::SessionLesson s;
  s.session = session_id_;
  s.problem = problem_.name;
  s.hardware = device_name(problem_.device);
  s.builtin = !planner_->space().empty();
  s.signature = skills_signature_;
  s.used = problem_.library;
  for (const auto& a : outcome_.attempts) {
    skills::AttemptFact f{.number = a.number,
                          .correct = a.correct,
                          .speedup = a.speedup,
                          .params = a.params,
                          .description = a.description};
    if (a.params.is_object() && a.params.contains("intent") && a.params["intent"].is_object())
      f.intent = a.params["intent"].value("title", std::string());
    s.attempts.push_back(std::move(f));
  }
  if (outcome_.best && !s.builtin)
    s.attempts[*outcome_.best].source =
        util::read_file(outcome_.attempts[*outcome_.best].path).value_or("");
  for (const auto& i : planner_->intents())
    if (i.status == "succeeded" && i.source != "root") s.gains.push_back(i.title);
  auto lesson = skills::learn(*deps_.store, s);
  if (!lesson) {
    observer_.warning("the skill library did not learn from this session: " +
                      lesson.error().message);
    return;
  }
  json learned = nullptr;
  if (lesson->learned)
    learned = {{"id", lesson->learned->id},
               {"title", lesson->learned->title},
               {"new", lesson->learned_new}};
  skills_report_ = {{"used", lesson->used}, {"learned", learned}};
  // The seeded intents carry their skill's resolved outcome into the tree.
  for (const auto& u : lesson->used)
    planner_->settle_skill(u.value("id", std::string()), u.value("outcome", std::string()));
  if (lesson->learned)
    observer_.search_decision(standing(), -1, "skill_learned",
                              fmt::format("{} {}: {}", lesson->learned_new ? "learnt" : "confirmed",
                                          lesson->learned->id, lesson->learned->title));
}

}  // namespace ok::optimize
