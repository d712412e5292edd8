// Learning: what a finished session adds to the skill library, by rule (docs/skills.md,
// "Learning").
//
// From the session's best correct attempt one skill is distilled: for the builtin generator its
// template point (template and parameter values) with the moves that gained as text; for a model
// the technique (the winning attempt's description and the intent it tested) with a trimmed code
// exemplar of the winning kernel. The same skill learnt again is the same id: its evidence grows.
// Each skill the session was fed gets its outcome: builtin, helped when the point it names came
// within 2% of the session's best, failed when that point was incorrect or 10% or more below the
// best, neutral otherwise or when it was not evaluated; model, helped when the session found a
// correct kernel at least as fast as the reference, failed when it found none, neutral otherwise.
// All in one write transaction. Pure apart from the store; not thread-safe per Store.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "skills/retrieve.hpp"
#include "store/store.hpp"

namespace ok::skills {

// One attempt as learning reads it.
struct AttemptFact {
  int number = 0;
  bool correct = false;
  std::optional<double> speedup;
  nlohmann::json params = nlohmann::json::object();  // the template point (builtin) or prompt
  std::string description;
  std::string intent;  // the title of the intent it tested ("" none)
  std::string source;  // the candidate's code (model sessions; "" when unread)
};

struct SessionLesson {
  std::string session, problem;
  std::string hardware;  // the device's name
  bool builtin = true;
  Signature signature;
  std::vector<AttemptFact> attempts;
  std::vector<std::string> gains;  // the titles of the intents that succeeded, in order
  std::vector<RankedSkill> used;   // what the session was fed
};

struct Lesson {
  std::optional<Skill> learned;  // the skill distilled (none without a correct attempt)
  bool learned_new = false;      // the library did not have it yet
  // Per skill used: {id, title, rank, outcome}.
  nlohmann::json used = nlohmann::json::array();
};

// The skill the session teaches, if any (no store needed: bench/skills_ablation uses it).
std::optional<Skill> distil(const SessionLesson& s);
// The outcome of skill `used` in session `s`: helped, failed or neutral.
std::string outcome_of(const Skill& used, const SessionLesson& s);
// Distils, resolves the uses and writes both in one transaction.
util::Result<Lesson> learn(store::Store& store, const SessionLesson& s);

// The code of `source` from its first kernel (a @triton.jit, __global__, extern "C" or #include
// line), at most `max_chars`, cut at a line end.
std::string exemplar_of(const std::string& source, size_t max_chars = 1500);

}  // namespace ok::skills
