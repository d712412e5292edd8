// Retrieval: a problem's signature, the skills ranked for it, and what the ranked skills feed:
// the builtin generator's prior order of template points and the model prompt's skill section.
//
// Ranking (docs/skills.md, "Retrieval"): skills whose confidence is below the floor are left out;
// a builtin skill applies only on its backend and, when the session has template points, only
// when its template is among them. The rest are ordered by the signature score (rounded to 0.1)
// first, then by BM25 of the problem's words against the skill's text times (0.5 + confidence),
// then by id. Before each model generation the fed skills are re-ranked by what the session has
// learnt so far (rerank). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "search/world_model.hpp"
#include "skills/skill.hpp"

namespace ok::skills {

struct RankedSkill {
  Skill skill;
  double signature_score = 0;
  double text_score = 0;  // BM25 times (0.5 + confidence)
  int rank = 0;           // 0: the best
};

// The signature of a problem from what the session knows: the worker's graph (analyze) and
// inspection, the device (device_info), the backend and the builtin template points (their
// "pattern"; empty for a model).
Signature signature_of(const nlohmann::json& graph, const nlohmann::json& inspect,
                       const nlohmann::json& device, const std::string& backend,
                       const std::vector<nlohmann::json>& points);

// How well skill signature `skill` fits problem signature `problem` (docs/skills.md has the
// terms); negative: it does not apply.
double signature_score(const Signature& skill, const std::string& kind, const Signature& problem);

struct RetrieveOptions {
  size_t top = 5;
  double min_confidence = 0.25;
  std::string query;                   // the problem's words (name), added to the signature's
  std::vector<nlohmann::json> points;  // the builtin template points (empty: a model)
};

std::vector<RankedSkill> retrieve(const std::vector<Skill>& library, const Signature& problem,
                                  const RetrieveOptions& options);

// One generation's order of the skills a session was fed (docs/skills.md, "Retrieval"): by BM25
// of `context` (what the session has learnt so far: optimize::skills_query) against each skill's
// document, times (0.5 + confidence), highest first; equal scores keep `fed`'s order, so an empty
// context, or one no skill shares a word with, changes nothing. Ranks are renumbered; the scores
// stay retrieval's.
std::vector<RankedSkill> rerank(std::vector<RankedSkill> fed, const std::string& context);

// Whether template point `point` is the one builtin skill `s` names (every parameter equal).
bool names_point(const Skill& s, const nlohmann::json& point);

// The template points' new order (indices into `points`), best first: a vote of the applicable
// skills, each point scoring the sum over them of confidence x fit x match (fit: the skill's
// signature score over the best applicable one's; match 1 when the skill names the point, else
// half the fraction of its parameters the point shares); a stable sort keeps the proposer's order
// among equal scores. Applicable: learned builtin skills of the points' own pattern whose
// template is among them (a seed skill stands for its template's own prior order, which the
// proposer follows already).
std::vector<size_t> prior_order(const std::vector<nlohmann::json>& points,
                                const std::vector<RankedSkill>& ranked);

// The ranked skills as the world model's seeded intents (search::Planner::seed), in rank order:
// a builtin skill with the index of the template point it names among `points` (none when it
// names none of them), a model skill with its technique (else its title).
std::vector<search::SeedIntent> seed_intents(const std::vector<RankedSkill>& ranked,
                                             const std::vector<nlohmann::json>& points);

// The model prompt's skill section's default budget: 6000 characters, about 1500 tokens at the
// documented estimate of four characters a token. The generator fits the section with the
// prompt's other sections (optimize::PromptBudgets::skills, scaled by --prompt-budget-tokens).
inline constexpr size_t kPromptBudgetChars = 6000;

// The model prompt's section on the ranked skills, at most `budget_chars` characters: each skill
// with its confidence, evidence counts and hardware, its text, a model skill's technique and its
// code exemplar (cut to fit), in rank order; the skills that do not fit are left out. "" when
// none fits.
std::string prompt_section(const std::vector<RankedSkill>& ranked, size_t budget_chars);

}  // namespace ok::skills
