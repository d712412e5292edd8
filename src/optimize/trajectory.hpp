// Trajectory memory: what a model's generator prompt says about the attempts a session made so
// far, summarised by rules so that a long session neither repeats itself nor overflows the
// context. Five sections, each with a stated budget (prompt_budget.hpp) and renderings from the
// fullest to the most compact:
//   recent     the last `recent_attempts` attempts in full (verdict, numbers, description, idea,
//              error, the critic's reading, code); the oldest are demoted to one line first;
//   best       the best correct kernel: its identity and numbers (never dropped), its code (cut
//              to the budget, head and tail kept, then left out);
//   diagnosis  the critic's diagnosis of the last attempt;
//   ideas      one line per distinct earlier idea (the search's intent, else the description)
//              among the attempts before the recent ones; the oldest are dropped first;
//   failures   one line per distinct failure class (verdict + integrity flags or the error's
//              class) over every attempt, with counts and attempt numbers; never dropped (its
//              most compact rendering shortens each line so that every class is named).
// A sixth, the skill library's section, is built here too, so that fit_trajectory() fits the
// whole generator prompt's variable part by one rule (fit_sections) within one total.
// Pure functions over the attempts' records: the same input gives the same sections. Docs:
// docs/optimize.md, "Trajectory memory and prompt budgets".
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "optimize/agents.hpp"
#include "optimize/prompt_budget.hpp"

namespace ok::optimize {

// The sections over `history` (oldest first). `sources` maps attempt numbers to their code (the
// caller reads the files: attempts_needing_code says which); a missing one is left out.
// `measure` sizes a rendering, so the best kernel's code can be cut to its budget.
std::vector<PromptSection> trajectory_sections(const std::vector<Attempt>& history,
                                               const std::map<int, std::string>& sources,
                                               const PromptBudgets& budgets,
                                               const Measure& measure);

// The skill library's section (src/skills), named "skills", priority kSkillsPriority: the ranked
// skills as skills::prompt_section renders them within the `skills` budget less the section's
// heading, then within a half, a quarter and an eighth of that (exemplars cut shorter, then left
// out, then the lowest-ranked skills left out); distinct, non-empty renderings only.
PromptSection skills_section(const std::vector<skills::RankedSkill>& ranked,
                             const PromptBudgets& budgets, const Measure& measure);

// The sections above and `extra` (another part of the prompt with its own budget and priority)
// fitted together by fit_sections() within `budgets.total`, then made consistent: the best
// kernel's recent attempt says "its code is the best kernel, below" only when the best section's
// chosen rendering carries that code. What every caller that fits a generator prompt uses.
FittedPrompt fit_trajectory(const std::vector<Attempt>& history,
                            const std::map<int, std::string>& sources, const PromptBudgets& budgets,
                            const Measure& measure, std::vector<PromptSection> extra = {});

// The attempts whose code the sections may show: the recent ones and the best.
std::vector<int> attempts_needing_code(const std::vector<Attempt>& history,
                                       const PromptBudgets& budgets);

// What the session has learnt so far, as the words skills::rerank orders the fed skills by
// before a model generation: the direction pursued now (its title), the critic's diagnosis of the
// last attempt (bottleneck, evidence, suggestions), its error, and the best correct attempt's
// description and intent. Deterministic; "" with no history and no direction.
std::string skills_query(const std::vector<Attempt>& history, const std::string& direction);

// The best correct attempt (highest speedup, the earliest on a tie); null when none.
const Attempt* best_attempt(const std::vector<Attempt>& history);

// An attempt's failure class without its verdict: "flags: a, b" for integrity flags, else the
// error's class (the exception's type and message, or the first error line), numbers, paths and
// addresses normalised, at most 80 characters; "(no message)" when there is no error.
std::string failure_class(const Attempt& a);

// Whether an attempt counts as a failure in the failure-class list.
bool is_failure(const Attempt& a);

}  // namespace ok::optimize
