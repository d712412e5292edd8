// Prompt budgets without a tokenizer: a prompt is assembled from named sections, each with a
// stated budget in characters, and fit_sections() chooses for every section the fullest rendering
// that keeps it within its own budget and the prompt's sections within their total.
//
// Tokens are estimated as characters / 4 (llm::estimate_tokens, the same rule the LLM layer uses
// when a provider reports no usage); budgets are stated in tokens and converted with
// kCharsPerToken. The recorded LLM call carries the estimate beside the provider's reported usage
// so the rule can be checked (docs/optimize.md, "Trajectory memory and prompt budgets").
//
// A section offers its renderings as template contexts (the keys it adds to the prompt's
// context), fullest first; a Measure says how many characters a context adds to the rendered
// prompt. Pure functions over values; the Measure must be deterministic.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "optimize/prompts.hpp"

namespace ok::optimize {

inline constexpr size_t kCharsPerToken = 4;

// ceil(chars / 4).
size_t estimated_tokens(size_t chars);

struct PromptSection {
  std::string name;
  // The section's renderings as the context keys it adds, fullest first; each later one says
  // less. Empty: the section has nothing to say.
  std::vector<nlohmann::json> variants;
  size_t budget_chars = 0;  // the section's own limit, in rendered characters
  int priority = 0;         // over the total, lower priorities give up space first
};

struct FittedSection {
  std::string name;
  size_t variant = 0;  // index of the chosen rendering
  size_t variants = 0;
  size_t chars = 0;  // what the chosen rendering adds to the prompt
  size_t budget_chars = 0;
  bool over_budget = false;  // even the most compact rendering exceeds the budget
  nlohmann::json context = nlohmann::json::object();
};

struct FittedPrompt {
  std::vector<FittedSection> sections;  // in the order given
  size_t chars = 0;                     // all sections together
  size_t budget_chars = 0;              // the total asked for
  bool over_budget = false;             // a section, or the total, could not be brought within

  // Every section's keys merged into `ctx` (later sections win on a shared key).
  void merge_into(nlohmann::json& ctx) const;
  // {budget_chars, chars, estimated_tokens, sections: [{name, variant, variants, chars,
  // budget_chars, over_budget}]}: what the recorded call and the attempt carry.
  nlohmann::json summary() const;
};

// The smallest total --prompt-budget-tokens accepts: below it the compact renderings no longer fit.
inline constexpr int kMinPromptBudgetTokens = 1000;

// The generator prompt's section budgets, in estimated tokens (characters / 4). The defaults are
// documented in docs/optimize.md; --prompt-budget-tokens scales them all.
struct PromptBudgets {
  size_t best = 3000;          // the best kernel
  size_t recent = 4000;        // the last attempts in full
  size_t diagnosis = 400;      // the critic's diagnosis of the last attempt
  size_t ideas = 600;          // one line per distinct earlier idea
  size_t failures = 600;       // one line per distinct failure class
  size_t skills = 1500;        // the skill library's section (skills::kPromptBudgetChars / 4)
  size_t total = 9000;         // every section together
  size_t recent_attempts = 4;  // attempts shown in full
  size_t code_chars = 3000;    // a recent attempt's code, head and tail kept
  size_t error_chars = 1500;   // a recent attempt's error, head and tail kept

  static size_t chars(size_t tokens) { return tokens * kCharsPerToken; }
  // Every token budget scaled in proportion so that `total` becomes `total_tokens`.
  PromptBudgets scaled_to(size_t total_tokens) const;
};

// Trim order over the total (lowest first): recent attempts demoted, then code shortened (the best
// kernel's and the skills' exemplars), then the diagnosis and ideas; failures last.
inline constexpr int kRecentPriority = 0;
inline constexpr int kBestPriority = 1;
inline constexpr int kSkillsPriority = 1;
inline constexpr int kDiagnosisPriority = 2;
inline constexpr int kIdeasPriority = 2;
inline constexpr int kFailuresPriority = 3;

// Characters a context adds to the rendered prompt.
using Measure = std::function<size_t(const nlohmann::json& context)>;

// Each section takes its first rendering within its own budget (else its last, marked
// over_budget). While the sections together exceed `total_budget_chars`, the section of lowest
// priority (then the larger, then the earlier) that still has a more compact rendering steps down
// one; when none has, the prompt is marked over_budget. Deterministic.
FittedPrompt fit_sections(const std::vector<PromptSection>& sections, size_t total_budget_chars,
                          const Measure& measure);

// The Measure of template `t`: the length of `t` rendered with a context less its length rendered
// with an empty one. A context that does not render measures as 0.
Measure template_measure(const Template& t);

}  // namespace ok::optimize
